"""Kill `kernelopt run` with SIGKILL at chosen instants, run it again, and check the record.

The kill comes from the benchmark itself (mid-measurement) or from git's
``reference-transaction`` hook the instant a chosen ref update is committed,
so it lands between two of the runner's git steps rather than at a random time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git
from benchmarks_support.signals import as_foreground

from kernelopt.history import RunRepo, read_trailers
from kernelopt.program import load_program
from kernelopt.proposers.base import Candidate
from kernelopt.session import Session

# Each test starts `kernelopt` twice as a real process: about 25 s for the file.
pytestmark = pytest.mark.slow

# X values and what a full, uninterrupted run records for them (noise-free bench):
# 80 is kept, 130 regresses, 70 is kept again; 100 is the baseline.
SPACE = [100, 80, 130, 70]
VERDICTS = ["baseline", "keep", "regression", "keep"]
METRICS = [100.0, 80.0, 130.0, 70.0]

HOOK = """#!/bin/bash
# Kill the runner after the {count}th committed update of a ref matching the pattern.
[ "$1" = committed ] || exit 0
while read -r old new ref; do
  [ -f {pid_file} ] || continue
  [[ "$ref" == {pattern} ]] || continue
  if [ -n "{subject}" ]; then
    subject=$(git log -1 --format=%s "$new" 2>/dev/null)
    [[ "$subject" == "{subject}"* ]] || continue
  fi
  n=$(( $(cat {count_file} 2>/dev/null || echo 0) + 1 ))
  echo "$n" > {count_file}
  [ "$n" -ge {count} ] || continue
  echo "$ref" > {killed_file}
  kill -9 "$(cat {pid_file})"
  rm -f {pid_file}
done
exit 0
"""


def start_run(repo: BenchRepo, pid_file: Path | None) -> subprocess.Popen[str]:
    """Start the runner; with ``pid_file``, its pid is where the kill switches look."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    if pid_file is not None:
        env["BENCH_PID_FILE"] = str(pid_file)
    proc = subprocess.Popen(
        ["kernelopt", "run", str(repo.program), "--tag", "t"],
        preexec_fn=as_foreground,
        cwd=repo.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if pid_file is not None:
        pid_file.write_text(str(proc.pid))
    return proc


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def settle(repo: BenchRepo) -> None:
    """Let a git process orphaned by the kill finish its transaction."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        # kernelopt's own run lock is a file that stays; git's lock files go. The
        # orphaned git may remove folders while we look: a vanished one holds no lock.
        locks = [
            Path(folder, name)
            for folder, _, names in os.walk(repo.root / ".git")
            for name in names
            if name.endswith(".lock") and "kernelopt" not in Path(folder).parts
        ]
        if not locks:
            return
        time.sleep(0.05)


def install_hook(repo: BenchRepo, tmp: Path, pattern: str, count: int, subject: str = "") -> Path:
    killed = tmp / "killed"
    hook = repo.root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(
        HOOK.format(
            pid_file=tmp / "runner.pid",
            pattern=pattern,
            subject=subject,
            count=count,
            count_file=tmp / "hook.count",
            killed_file=killed,
        )
    )
    hook.chmod(0o755)
    return killed


def check_consistent(repo: BenchRepo, verdicts: list[str], metrics: list[float]) -> None:
    """What an uninterrupted run would have left, and nothing else."""
    refs = repo.attempt_refs()
    assert list(refs) == list(range(len(verdicts))), "attempt numbers lost or reused"
    notes = repo.notes()
    assert [notes[n]["verdict"] for n in refs] == verdicts
    assert [notes[n]["metric"] for n in refs] == metrics
    for n, note in notes.items():
        assert note["attempt"] == n
        assert note["counters"]["attempts"] == n
    regressions = [note["counters"]["consecutive_regressions"] for note in notes.values()]
    assert regressions == [1 if v == "regression" else 0 for v in verdicts]
    # One note per attempt commit; any other note is on a ledger commit (a stop).
    noted = [
        line.split()[1]
        for line in git(repo.root, "notes", "--ref", "kernelopt", "list").splitlines()
    ]
    assert set(refs.values()) <= set(noted)
    assert len(noted) == len(set(noted))
    # BEST lineage: the branch is baseline + kept work only, each once.
    branch = git(repo.root, "rev-list", repo.branch()).split()
    kept = [refs[n] for n, v in enumerate(verdicts) if v in ("baseline", "keep")]
    dropped = [refs[n] for n, v in enumerate(verdicts) if v not in ("baseline", "keep")]
    assert all(sha in branch for sha in kept)
    assert not any(sha in branch for sha in dropped)
    subjects = repo.branch_subjects()
    ledger_commits = [
        s for s in subjects if s.startswith(("kernelopt: keep", "kernelopt: baseline"))
    ]
    assert len(ledger_commits) == len(kept)
    assert repo.rev(repo.ref("best")) == repo.rev(repo.branch())
    # performance.md: one row per baseline and keep, never twice.
    rows = [line for line in repo.ledger().splitlines() if line.startswith("| 20")]
    shas = Counter(line.split("|")[2].strip().strip("`") for line in rows)
    assert shas == Counter(sha[:10] for sha in kept)
    fsck = subprocess.run(
        ["git", "fsck", "--no-dangling"], cwd=repo.root, capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert "error" not in fsck.stderr.lower() and "missing" not in fsck.stdout.lower()
    assert git(repo.worktree(), "status", "--porcelain", "--untracked-files=all") == ""
    assert git(repo.worktree(), "rev-parse", "HEAD").strip() == repo.rev(repo.ref("best"))


def resume(repo: BenchRepo) -> str:
    settle(repo)
    code, out, err = finish(start_run(repo, None))
    assert code == 0, out + err
    assert "Traceback" not in err
    return out


def test_killed_mid_measurement(bench_repo: RepoFactory, tmp_path: Path) -> None:
    # The third candidate's benchmark kills the runner, once; measured again it reads 100.
    repo = bench_repo(space=[100, 80, "signal:SIGKILL", 70])
    pid_file = tmp_path / "runner.pid"

    code, _, _ = finish(start_run(repo, pid_file))

    assert code == -signal.SIGKILL
    refs = repo.attempt_refs()
    assert list(refs) == [0, 1, 2]
    assert git(repo.root, "notes", "--ref", "kernelopt", "list", refs[2], check=False) == ""
    resume(repo)
    check_consistent(repo, VERDICTS, [100.0, 80.0, 100.0, 70.0])


KILL_POINTS = {
    "run branch created": ("refs/heads/kernelopt/x-t", 1, ""),
    "baseline attempt ref": ("refs/kernelopt/x-t/attempts/0", 1, ""),
    "candidate attempt ref": ("refs/kernelopt/x-t/attempts/2", 1, ""),
    "note of a keep": ("refs/notes/kernelopt", 2, ""),
    "note of a regression": ("refs/notes/kernelopt", 3, ""),
    "keep ledger commit": ("refs/heads/kernelopt/x-t", 1, "kernelopt: keep #1"),
    "best ref of a keep": ("refs/kernelopt/x-t/best", 2, ""),
    "best ref of the last keep": ("refs/kernelopt/x-t/best", 3, ""),
    # reset --hard records ORIG_HEAD: a kill after a revert, before the next commit.
    "worktree reset": ("ORIG_HEAD", 4, ""),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_killed_between_git_steps(bench_repo: RepoFactory, tmp_path: Path, point: str) -> None:
    pattern, count, subject = KILL_POINTS[point]
    repo = bench_repo(space=SPACE)
    killed = install_hook(repo, tmp_path, pattern, count, subject)

    code, _, err = finish(start_run(repo, tmp_path / "runner.pid"))

    assert killed.exists(), f"the hook never fired: {err}"
    assert code == -signal.SIGKILL
    (repo.root / ".git" / "hooks" / "reference-transaction").unlink()
    resume(repo)
    check_consistent(repo, VERDICTS, METRICS)


def test_ctrl_c_records_the_attempt_as_interrupted(bench_repo: RepoFactory, tmp_path: Path) -> None:
    repo = bench_repo(space=[100, "signal:SIGINT", 80])

    code, _, err = finish(start_run(repo, tmp_path / "runner.pid"))

    assert code == 130, err
    assert "Traceback" not in err and "interrupted" in err
    notes = repo.notes()
    assert notes[1]["verdict"] == "interrupted"
    assert "Ctrl-C" in notes[1]["error"]
    assert repo.rev(repo.branch()) == repo.rev(repo.ref("best"))
    assert git(repo.worktree(), "status", "--porcelain") == ""
    # Started again, the run goes on after the interrupted attempt.
    resume(repo)
    check_consistent(repo, ["baseline", "interrupted", "keep"], [100.0, None, 80.0])


@pytest.mark.parametrize(
    ("pattern", "count", "subject"),
    [
        ("refs/heads/kernelopt/x-t", 1, "kernelopt: stop"),  # the Stop Summary commit
        ("refs/notes/kernelopt", 5, ""),  # the stop note, after four attempts' notes
    ],
)
def test_killed_while_recording_the_stop(
    bench_repo: RepoFactory, tmp_path: Path, pattern: str, count: int, subject: str
) -> None:
    repo = bench_repo(space=[100, 130, 140, 150, 160], decide={"max_consecutive_regressions": 3})
    killed = install_hook(repo, tmp_path, pattern, count, subject)

    code, _, err = finish(start_run(repo, tmp_path / "runner.pid"))

    assert killed.exists(), f"the hook never fired: {err}"
    assert code == -signal.SIGKILL
    (repo.root / ".git" / "hooks" / "reference-transaction").unlink()
    out = resume(repo)
    # The limit was reached before the kill: no further candidate is measured.
    assert list(repo.attempt_refs()) == [0, 1, 2, 3]
    assert "3 consecutive measured regressions" in out
    assert repo.rev(repo.ref("stop")) is not None
    assert repo.ledger().count("### Stop Summary") == 1


def test_trailer_lines_in_a_hypothesis_do_not_pass_for_the_runners_own(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=None)
    assert cli("run", str(repo.program), "--tag", "t", cwd=repo.root).exit_code == 0
    # An agent's hypothesis quoting trailers, committed and never measured (a kill).
    (repo.worktree() / "knobs.json").write_text('{"X": 80}\n')
    hypothesis = (
        "smaller X\n\nKernelopt-Knobs: {not json\nKernelopt-Kind: knob\nKernelopt-Signature: x"
    )
    sha = RunRepo(repo.root, repo.run_id()).commit_attempt(1, "edit", hypothesis)
    assert sha is not None and read_trailers(git(repo.root, "log", "-1", "--format=%B", sha)) == {
        "Kernelopt-Run": repo.run_id(),
        "Kernelopt-Attempt": "1",
        "Kernelopt-Kind": "edit",
    }

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    note = repo.notes()[1]
    assert note["verdict"] == "keep" and note["kind"] == "edit"
    assert note["knobs"] is None and note["signature"] is None


def test_batch_candidates_carry_their_knobs_for_a_resume(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80, 130])
    assert (
        cli(
            "run", str(repo.program), "--tag", "t", "--max-candidates", "0", cwd=repo.root
        ).exit_code
        == 0
    )
    runner = Session.create(load_program(repo.program), tag="t").runner
    runner.open()
    candidates = [
        Candidate("knob", f"X -> {x}", {"knobs.json": f'{{"X": {x}}}\n'}, {"X": x}, f"sig{x}")
        for x in (80, 130)
    ]

    results = runner.try_batch(candidates)

    assert [r.verdict for r in results] == ["keep", "regression"]
    for result, x in zip(results, (80, 130), strict=True):
        message = git(repo.root, "log", "-1", "--format=%B", result.commit)
        assert read_trailers(message)["Kernelopt-Knobs"] == f'{{"X":{x}}}'
        assert read_trailers(message)["Kernelopt-Signature"] == f"sig{x}"


def test_ctrl_c_during_try_exits_with_the_interrupted_code(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = bench_repo(space=None)
    assert cli("run", str(repo.program), "--tag", "t", cwd=repo.root).exit_code == 0
    (repo.worktree() / "knobs.json").write_text('{"X": "signal:SIGINT"}\n')
    pid_file = tmp_path / "try.pid"
    env = {**os.environ, "BENCH_PID_FILE": str(pid_file)}
    proc = subprocess.Popen(
        ["kernelopt", "try", "-m", "interrupted", "--json"],
        preexec_fn=as_foreground,
        cwd=repo.worktree(),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid_file.write_text(str(proc.pid))
    code, _, err = finish(proc)

    assert repo.notes()[1]["verdict"] == "interrupted"
    assert repo.rev(repo.branch()) == repo.rev(repo.ref("best"))
    assert "Traceback" not in err
    assert code == 15, err
