"""A killed candidate is resolved the same way by `run` and `try` (measured as
it was committed, never folded into the next candidate), and faults of
kernelopt's own storage are reported as faults, never recorded as verdicts."""

from __future__ import annotations

import json
import os
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
        env={**os.environ, "BENCH_PID_FILE": str(pid_file)},
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


def test_an_unwritable_run_record_mid_candidate_is_a_fault_and_the_candidate_stays_pending(
    tmp_path: Path,
) -> None:
    # The benchmark of X 80 replaces the list of the run's benchmarks under
    # .git/kernelopt with a directory, once: kernelopt's own storage fails
    # while that candidate is measured (it is measured twice, beside BEST).
    root = tmp_path / "repo"
    from benchmarks_support.gitrepo import make_repo

    make_repo(root)
    (root / "bench.sh").write_text(
        "x=$(sed -n 's/.*\"X\": *\\([0-9]*\\).*/\\1/p' knobs.json)\n"
        'if [ "$x" = 80 ] && [ -e "$BREAK_ONCE" ]; then rm -f "$BREAK_ONCE" "$RECORD"; '
        'mkdir "$RECORD"; fi\n'
        'echo "time: $x"; echo "err: 0"\n'
    )
    (root / "knobs.json").write_text('{"X": 100}\n')
    (root / "p.md").write_text(
        "---\nkernelopt: 1\nname: p\ntarget:\n  kind: command\n  command: bash bench.sh\n"
        "  results: {format: stdout}\n  correct: err == 0\n"
        "  knobs: {file: knobs.json, space: {X: [100, 80, 70]}}\n"
        "metric: {name: time, better: lower}\ndevice: {kind: none}\n"
        "decide: {noise: 1%, confirm: 2, max_samples: 4}\n---\nTune X.\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "bench")
    record = root / ".git" / "kernelopt" / "locks" / "p-t.children"
    flag = tmp_path / "break"
    flag.write_text("")
    env = {**os.environ, "BREAK_ONCE": str(flag), "RECORD": str(record)}

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kernelopt.cli", "run", "p.md", "--tag", "t"],
            cwd=root, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    first = run()

    assert first.returncode == 4, first.stdout + first.stderr
    assert "Traceback" not in first.stderr
    assert "kernelopt's own storage, lock or host" in first.stderr
    assert str(record) in first.stderr
    refs = git(root, "for-each-ref", "--format=%(refname)", "refs/kernelopt/p-t/attempts/")
    assert len(refs.split()) == 2  # the baseline and the pending candidate
    pending = git(root, "rev-parse", "refs/kernelopt/p-t/attempts/1").strip()
    assert git(root, "notes", "--ref", "kernelopt", "list", pending, check=False) == ""

    record.rmdir()  # fixed
    second = run()

    assert second.returncode == 0, second.stdout + second.stderr
    note = json.loads(git(root, "notes", "--ref", "kernelopt", "show", pending))
    assert note["verdict"] == "keep" and note["metric"] == 80.0  # measured, not "failed"


def test_try_on_a_full_disk_is_a_fault_not_a_traceback_and_not_a_verdict(
    bench_repo: RepoFactory, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import tempfile

    repo = started(bench_repo, cli)
    wt = repo.worktree()
    (wt / "knobs.json").write_text('{"X": 80}\n')

    def full(*args: object, **kwargs: object) -> object:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(tempfile, "TemporaryFile", full)
        result = cli("try", "-m", "X 80", "--json", cwd=wt)

    assert result.exit_code == 4, result.output
    assert "No space left on device" in result.stderr
    assert "stays pending" in result.stderr
    assert json.loads(result.stdout)["verdict"] is None
    assert "No space left on device" in json.loads(result.stdout)["fault"]
    assert sorted(repo.attempt_refs()) == [0, 1]
    assert git(repo.root, "notes", "--ref", "kernelopt", "list", repo.attempt_refs()[1],
               check=False) == ""  # fmt: skip
    again = cli("try", "-m", "X 80", "--json", cwd=wt)
    assert json.loads(again.stdout)["verdict"] == "keep", again.output
    assert json.loads(again.stdout)["attempt"] == 1


def test_a_read_only_performance_md_is_a_clear_error_and_the_keep_is_finished_later(
    bench_repo: RepoFactory, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernelopt import ledger

    repo = started(bench_repo, cli)
    wt = repo.worktree()
    (wt / "knobs.json").write_text('{"X": 80}\n')
    real = ledger.append

    def read_only(path: Path, text: str) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    with monkeypatch.context() as patch:
        patch.setattr(ledger, "append", read_only)
        result = cli("try", "-m", "X 80", cwd=wt)

    assert result.exit_code == 4, result.output
    assert "Permission denied" in result.stderr and "performance.md" in result.stderr
    assert ledger.append is real
    status = cli("status", "--json", cwd=repo.root)
    assert json.loads(status.stdout)["best_attempt"] == 1  # the note says keep
    again = cli("run", str(repo.program), "--tag", "t", "--max-candidates", "0", cwd=repo.root)
    assert again.exit_code == 0, again.output
    assert repo.attempt_refs()[1][:10] in repo.ledger()  # the keep commit, made now


def test_a_host_that_fails_on_two_devices_is_a_fault_not_a_failed_candidate(
    tmp_path: Path,
) -> None:
    import contextlib

    from kernelopt.executor import HostFault
    from kernelopt.measurement import Fault
    from kernelopt.records import Pending
    from kernelopt.sampling import Sampler, SilentReporter

    class Unreachable:
        """Every device's host drops the connection mid-measurement."""

        slots = 2
        tries = 0

        @contextlib.contextmanager
        def device(self):  # type: ignore[no-untyped-def]
            self.tries += 1
            raise HostFault(f"host{self.tries}: connection reset")
            yield

    executor = Unreachable()
    sampler = Sampler(object(), executor, SilentReporter(), lambda: tmp_path)  # type: ignore[arg-type]

    with pytest.raises(Fault, match="host2: connection reset"):
        sampler.sample(Pending(1, "0" * 40, "knob", "X 80"), tmp_path, lambda _: True)
    assert executor.tries == 2  # retried once on another device first
