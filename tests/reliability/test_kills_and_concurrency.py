"""Nothing tried is lost: concurrent runs in one repository, kills that leave
git locks or a running benchmark behind, and metrics that are not measurements."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.synchronize
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git, make_repo
from benchmarks_support.processes import alive
from benchmarks_support.signals import as_foreground

from kernelopt.history import NOTES_REF, RunRepo

pytestmark = pytest.mark.slow


def _write_notes(root: str, run: str, shas: list[str]) -> None:
    repo = RunRepo(root, run)
    for sha in shas:
        repo.write_note(sha, {"by": run, "sha": sha})


def test_notes_written_by_many_processes_at_once_are_all_kept(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    for i in range(40):
        git(root, "commit", "-q", "--allow-empty", "-m", f"c{i}")
    shas = git(root, "rev-list", "HEAD").split()[:40]
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_write_notes, args=(str(root), f"run{i}", shas[i::8])) for i in range(8)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 8
    listed = git(root, "notes", "--ref", NOTES_REF, "list").splitlines()
    assert {line.split()[1] for line in listed} == set(shas)
    for sha in shas:
        assert json.loads(git(root, "notes", "--ref", NOTES_REF, "show", sha))["sha"] == sha
    # No scratch refs are left behind.
    assert git(root, "for-each-ref", "refs/notes/kernelopt-scratch") == ""


def _add_worktrees(root: str, runs: list[str], start: multiprocessing.synchronize.Event) -> None:
    start.wait(10)
    for run in runs:
        RunRepo(root, run).ensure_worktree()


def test_runs_starting_at_once_each_get_their_worktree(tmp_path: Path) -> None:
    # One run's `git worktree prune` used to remove the entry another run's
    # `git worktree add` had just created, and that add failed.
    root = make_repo(tmp_path / "repo")
    git(root, "commit", "-q", "--allow-empty", "-m", "start")
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    runs = [[f"p{p}-r{r}" for r in range(10)] for p in range(6)]
    procs = [ctx.Process(target=_add_worktrees, args=(str(root), mine, start)) for mine in runs]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    for run in (run for mine in runs for run in mine):
        assert (RunRepo(root, run).worktree / ".git").is_file()


def kernelopt(repo: BenchRepo, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kernelopt.cli", *args],
        cwd=repo.root,
        preexec_fn=as_foreground,  # some tests interrupt it as Ctrl-C would
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def one_note_per_attempt(repo: BenchRepo, tag: str) -> dict[int, dict]:
    refs = repo.attempt_refs(tag)
    notes = {n: repo.note(sha) for n, sha in refs.items()}
    assert list(notes) == list(range(len(refs)))
    assert all(note["attempt"] == n for n, note in notes.items())
    return notes


def test_four_runs_of_one_program_at_once_lose_no_note(bench_repo: RepoFactory) -> None:
    repo = bench_repo(space=[100, 80, 130, 70, 90, 60])
    tags = ["a", "b", "c", "d"]
    procs = [kernelopt(repo, "run", str(repo.program), "--tag", tag) for tag in tags]
    outs = [p.communicate(timeout=240) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in outs]
    for tag in tags:
        notes = one_note_per_attempt(repo, tag)
        assert [n["verdict"] for n in notes.values()] == [
            "baseline",
            "keep",
            "regression",
            "keep",
            "regression",
            "keep",
        ]
        assert notes[5]["metric"] == 60.0


def test_a_try_racing_a_run_in_one_repository(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80, 130, 70, 90, 60])
    # Run "t" exists with its baseline; then a run "r" and a try on "t" go at once.
    assert cli("run", str(repo.program), "--tag", "t", "--max-candidates", "0", cwd=repo.root)
    worktree = repo.worktree("t")
    (worktree / "knobs.json").write_text('{"X": 50}\n')
    run = kernelopt(repo, "run", str(repo.program), "--tag", "r")
    tries = subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", "try", "-m", "X 50", "--json"],
        cwd=worktree,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out, err = run.communicate(timeout=240)
    assert run.returncode == 0, err
    assert json.loads(tries.stdout)["verdict"] == "keep", tries.stderr
    assert [n["verdict"] for n in one_note_per_attempt(repo, "t").values()] == ["baseline", "keep"]
    assert len(one_note_per_attempt(repo, "r")) == 6


def test_git_locks_left_by_a_killed_runner_are_cleared_by_the_next(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 70])
    assert cli("run", str(repo.program), "--tag", "t", "--max-candidates", "1", cwd=repo.root)
    admin = repo.root / ".git" / "worktrees" / repo.run_id()
    locks = [
        admin / "HEAD.lock",
        admin / "index.lock",
        repo.root / ".git" / "refs" / "heads" / "kernelopt" / f"{repo.run_id()}.lock",
        repo.root / ".git" / "refs" / "kernelopt" / repo.run_id() / "best.lock",
    ]
    for lock in locks:
        lock.write_text("")
    # Without the clean-up git refuses the next commit: prove the locks bite.
    wt = repo.worktree()
    refused = subprocess.run(
        ["git", "commit", "--allow-empty", "-m", "x"], cwd=wt, capture_output=True
    )
    assert refused.returncode != 0 and b".lock" in refused.stderr

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    for lock in locks:
        assert not lock.exists()
        assert f"removed {lock}" in result.output
    notes = one_note_per_attempt(repo, "t")
    assert [n["verdict"] for n in notes.values()] == ["baseline", "keep", "keep"]


def test_a_benchmark_left_by_a_killed_runner_is_killed_before_the_rerun_measures(
    bench_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = bench_repo(space=[100, "sleep:60", 70])
    sleepers = tmp_path / "sleepers"
    env = {"BENCH_SLEEPER_FILE": str(sleepers)}
    first = kernelopt(repo, "run", str(repo.program), "--tag", "t", env=env)
    deadline = time.monotonic() + 60
    while not sleepers.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    leftover = int(sleepers.read_text().split()[0])
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    assert alive(leftover), "the benchmark should have outlived the SIGKILLed runner"

    # The rerun measures attempt 1 again (sleep:60 would take a minute): it is
    # the kill of the leftover, not the rerun's end, that we wait for.
    rerun = kernelopt(repo, "run", str(repo.program), "--tag", "t", env=env)
    deadline = time.monotonic() + 30
    while alive(leftover) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(leftover)
    # Only the rerun's own benchmark is running in the worktree now.
    deadline = time.monotonic() + 30
    while len(sleepers.read_text().split()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    mine = int(sleepers.read_text().split()[1])
    assert alive(mine)
    rerun.send_signal(signal.SIGINT)
    out, _ = rerun.communicate(timeout=60)
    assert f"killed process group {leftover}" in out
    deadline = time.monotonic() + 10
    while alive(mine) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(mine), "Ctrl-C must end the runner's benchmark too"


@pytest.mark.parametrize("nonsense", [-5, 0])
def test_a_time_that_is_not_positive_is_a_failed_measurement(
    bench_repo: RepoFactory, cli: Cli, nonsense: float
) -> None:
    repo = bench_repo(space=[100, nonsense, 80])
    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    notes = one_note_per_attempt(repo, "t")
    assert [n["verdict"] for n in notes.values()] == ["baseline", "failed", "keep"], result.output
    assert f"time={float(nonsense)!r}: outside the valid range (0, inf)" in notes[1]["error"]
    assert "row 0" in notes[1]["error"]
    ledger = repo.ledger()
    assert f"| {nonsense} " not in ledger and "+102" not in ledger and "+100.0" not in ledger


def test_a_declared_valid_range_is_the_rule(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80, 20])
    text = repo.program.read_text().replace(
        "better: lower\n", "better: lower\n  valid:\n  - 50\n  - null\n"
    )
    repo.program.write_text(text)
    git(repo.root, "commit", "-qam", "times below 50 us are impossible")
    cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    notes = one_note_per_attempt(repo, "t")
    assert [n["verdict"] for n in notes.values()] == ["baseline", "keep", "failed"]
    assert "outside the valid range [50, inf)" in notes[2]["error"]


def test_an_uncommitted_knob_file_in_the_checkout_is_not_the_start(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(x0=100, space=[100, 80, 130])
    (repo.root / "knobs.json").write_text('{"X": 130}\n')  # the user's edit, not committed
    before = git(repo.root, "status", "--porcelain")

    cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    notes = one_note_per_attempt(repo, "t")
    assert notes[1]["hypothesis"] == "X 100 -> 80"
    first = repo.attempt_refs("t")[1]
    assert json.loads(git(repo.root, "show", f"{first}:knobs.json")) == {"X": 80}
    assert json.loads(git(repo.root, "show", f"{first}^:knobs.json")) == {"X": 100}
    assert git(repo.root, "status", "--porcelain") == before
    assert (repo.root / "knobs.json").read_text() == '{"X": 130}\n'
