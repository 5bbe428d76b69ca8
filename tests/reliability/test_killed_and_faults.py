"""A killed candidate is resolved the same way by `run` and `try` (measured as
it was committed, never folded into the next candidate), and faults of
kernelopt's own storage are reported as faults, never recorded as verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git

pytestmark = pytest.mark.slow  # kernelopt end to end, a few seconds each


def started(bench_repo: RepoFactory, cli: Cli, **options: object) -> BenchRepo:
    repo = bench_repo(**options)
    result = cli("run", str(repo.program), "--tag", "t", "--max-candidates", "0", cwd=repo.root)
    assert result.exit_code == 0, result.output
    return repo


def killed_try(repo: BenchRepo, tmp_path: Path) -> None:
    """A `try` whose benchmark SIGKILLs it mid-measurement: attempt 1 is left pending."""
    wt = repo.worktree()
    (wt / "knobs.json").write_text('{"X": "signal:SIGKILL"}\n')
    (wt / "extra.txt").write_text("part of attempt 1 only\n")
    pid_file = tmp_path / "runner.pid"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelopt.cli", "try", "-m", "the one that got killed"],
        cwd=wt,
        env={**__import__("os").environ, "BENCH_PID_FILE": str(pid_file)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pid_file.write_text(str(proc.pid))
    proc.communicate(timeout=60)
    assert proc.returncode == -9
    refs = repo.attempt_refs()
    assert sorted(refs) == [0, 1]
    assert git(repo.root, "notes", "--ref", "kernelopt", "list", refs[1], check=False) == ""


def test_try_after_a_killed_try_measures_it_as_committed_and_never_folds_it(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = started(bench_repo, cli)
    killed_try(repo, tmp_path)
    wt = repo.worktree()
    (wt / "knobs.json").write_text('{"X": 80}\n')  # the agent's next idea

    result = cli("try", "-m", "X 80", "--json", cwd=wt)

    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["attempt"] == 2 and answer["verdict"] == "keep"
    notes = repo.notes()
    assert notes[1]["verdict"] not in ("interrupted", "failed")  # measured (it reads 100)
    assert notes[1]["metric"] == 100.0
    second = repo.attempt_refs()[2]
    assert git(repo.root, "diff", "--name-only", f"{second}^", second).split() == ["knobs.json"]
    assert "extra.txt" not in git(repo.root, "ls-tree", "--name-only", second)
    assert repo.rev(repo.ref("carried")) is None


def test_try_after_a_killed_try_with_no_new_edit_answers_for_the_killed_attempt(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = started(bench_repo, cli)
    killed_try(repo, tmp_path)

    result = cli("try", "-m", "the one that got killed", "--json", cwd=repo.worktree())

    answer = json.loads(result.stdout)
    assert answer["attempt"] == 1 and answer["metric"] == 100.0, result.output
    assert sorted(repo.notes()) == [0, 1]


def test_run_after_a_killed_try_measures_it_the_same_way(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = started(bench_repo, cli, space=[100, 80])
    killed_try(repo, tmp_path)

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    notes = repo.notes()
    assert notes[1]["verdict"] not in ("interrupted", "failed") and notes[1]["metric"] == 100.0
