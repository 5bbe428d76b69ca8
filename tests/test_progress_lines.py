"""Progress lines that agree with what happens: the budget of this invocation, and the
numbering after a resume."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks_support.gitrepo import Cli, RepoFactory
from benchmarks_support.signals import as_foreground


def test_the_progress_label_counts_to_max_candidates(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 90, 80, 70, 60], stop={"max_candidates": 60})

    out = cli("run", str(repo.program), "--tag", "t", "--max-candidates", "2", cwd=repo.root).output
    again = cli(
        "run", str(repo.program), "--tag", "t", "--max-candidates", "1", cwd=repo.root
    ).output

    assert "#1 of 2 knob" in out and "#2 of 2 knob" in out and "of 60" not in out
    assert "#3 of 3 knob" in again
    # The time-left estimate counts to the invocation's last candidate: none left after #2.
    assert re.search(r"#2 of 2 .*, ~0s left\]", out), out


def _run(repo_root: Path, program: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kernelopt.cli", "run", str(program), "--tag", "t"],
        preexec_fn=as_foreground,
        cwd=repo_root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_after_a_kill_resuming_names_the_attempt_measured_next(
    bench_repo: RepoFactory, tmp_path: Path
) -> None:
    repo = bench_repo(space=[100, 80, "signal:SIGKILL", 70])
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_")}
    pid_file = tmp_path / "runner.pid"
    first = _run(repo.root, repo.program, {**env, "BENCH_PID_FILE": str(pid_file)})
    pid_file.write_text(str(first.pid))
    first.communicate(timeout=120)
    assert first.returncode == -signal.SIGKILL

    second = _run(repo.root, repo.program, env)
    out, err = second.communicate(timeout=120)

    assert second.returncode == 0, out + err
    numbers = [int(n) for n in re.findall(r"^  #(\d+) ", out, flags=re.M)]
    resumed = int(re.search(r"resuming at #(\d+)", out).group(1))  # type: ignore[union-attr]
    assert numbers and numbers[0] == resumed and numbers == sorted(numbers), out
