"""`kernelopt report` through click, against real runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from report_runs import RecordedRun, git, record_toy_baselines

from kernelopt.cli import main
from kernelopt.report.cli import report_command


def test_json_names_the_page_and_every_file(
    toy_run: RecordedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(toy_run.root)  # the repository's only run is picked
    out = CliRunner().invoke(report_command, ["--out", str(tmp_path / "r"), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["out"] == str((tmp_path / "r").resolve())
    assert data["files"][0].endswith("index.html")
    assert all(Path(f).is_file() for f in data["files"])
    assert {Path(f).name for f in data["files"]} >= {"metric.png", "counters.png"}


def _porcelain(path: Path) -> str:
    return git(path, "status", "--porcelain", "--untracked-files=all", "--ignored")


@pytest.mark.parametrize("where", ["checkout", "worktree"])
def test_by_default_the_report_goes_under_the_git_dir_and_no_checkout_changes(
    where: str, toy_run: RecordedRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = toy_run.root if where == "checkout" else toy_run.worktree
    before = {p: _porcelain(p) for p in (toy_run.root, toy_run.worktree)}
    monkeypatch.chdir(
        cwd
    )  # in the run's worktree the run is known; in the checkout it is the only one
    out = CliRunner().invoke(report_command, [])
    assert out.exit_code == 0, out.output
    target = toy_run.root / ".git" / "kernelopt" / "reports" / "toy-t"
    assert f"written to {target / 'index.html'}" in out.output
    assert str(target / "metric.png") in out.output
    assert (target / "index.html").is_file()
    # the page records the program the run was started with
    assert "program toy.md" in (target / "index.html").read_text()
    assert {p: _porcelain(p) for p in before} == before


def test_several_runs_are_picked_by_the_positional_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = record_toy_baselines(tmp_path, ("a", "b"))
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(main, ["report"])
    assert out.exit_code == 1
    assert "pick one with `kernelopt report RUN`" in out.output, out.output
    assert "--run" not in out.output and all(run in out.output for run in runs)
    # the syntax the message names works
    picked = CliRunner().invoke(main, ["report", runs[1], "--json"])
    assert picked.exit_code == 0, picked.output
    assert Path(json.loads(picked.output)["out"]).name == runs[1]
    usage = CliRunner().invoke(main, ["report", "--help"], prog_name="kernelopt").output
    assert "kernelopt report [OPTIONS] [RUN]" in usage and "--run" not in usage


def test_unknown_run_is_a_clear_error(
    toy_run: RecordedRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(toy_run.root)
    out = CliRunner().invoke(report_command, ["nosuch-run", "--out", "x"])
    assert out.exit_code == 1
    assert "no run 'nosuch-run'" in out.output and "toy-t" in out.output


def test_a_repository_without_runs_says_how_to_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    out = CliRunner().invoke(report_command, ["--out", "x"])
    assert out.exit_code == 1 and "kernelopt run PROGRAM" in out.output
    assert not (tmp_path / "x").exists()


def test_help_has_an_example() -> None:
    assert isinstance(report_command, click.Command)
    assert report_command.help and "Example" in report_command.help
