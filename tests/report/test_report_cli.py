"""`kernelopt report` through click, against real runs."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from report_runs import RecordedRun

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


def test_inside_the_worktree_the_run_is_known_and_the_default_dir_used(
    toy_run: RecordedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(toy_run.worktree)
    out = CliRunner().invoke(report_command, [])
    target = toy_run.worktree / "kernelopt-report-toy-t"
    try:
        assert out.exit_code == 0, out.output
        assert f"written to {target / 'index.html'}" in out.output
        assert str(target / "metric.png") in out.output
        # the page records the program the run was started with
        assert "program toy.md" in (target / "index.html").read_text()
    finally:
        shutil.rmtree(target, ignore_errors=True)


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
