"""Nothing left running: SIGTERM and SIGHUP end `run` and `try` as Ctrl-C does
(the attempt recorded, the benchmark's process tree killed), and a daemon a
benchmark starts with `setsid` ends with the measurement that started it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from benchmarks_support.gitrepo import git, make_repo
from benchmarks_support.processes import alive

pytestmark = pytest.mark.slow

# The benchmark reads X from knobs.json: a number is its time; "slow" writes its
# pid to $SLOW_FILE and sleeps (a measurement to interrupt). With $DAEMON_FILE
# set, it first starts a daemon in a session of its own that outlives it.
BENCH = r"""#!/bin/bash
x=$(sed -n 's/.*"X": *"\{0,1\}\([^"}]*\)"\{0,1\}.*/\1/p' knobs.json)
if [ -n "$DAEMON_FILE" ]; then
  before=$(cat "$DAEMON_FILE" 2>/dev/null | wc -l)
  setsid sh -c 'echo $$ >> "$DAEMON_FILE"; exec sleep 300' </dev/null >/dev/null 2>&1 &
  for _ in $(seq 100); do  # until the daemon is up
    [ "$(cat "$DAEMON_FILE" 2>/dev/null | wc -l)" -gt "$before" ] && break
    sleep 0.02
  done
fi
if [ "$x" = slow ]; then
  echo $$ >> "$SLOW_FILE"
  sleep 300
  x=100
fi
echo "time: $x"
echo "err: 0"
"""


def daemon_repo(root: Path, space: list[object]) -> Path:
    make_repo(root)
    (root / "bench.sh").write_text(BENCH)
    (root / "knobs.json").write_text('{"X": 100}\n')
    front = {
        "kernelopt": 1,
        "name": "d",
        "target": {
            "kind": "command",
            "command": "bash bench.sh",
            "results": {"format": "stdout"},
            "correct": "err == 0",
            "knobs": {"file": "knobs.json", "space": {"X": space}},
        },
        "metric": {"name": "time", "better": "lower"},
        "device": {"kind": "none"},
        "timeout": "60s",
    }
    (root / "d.md").write_text("---\n" + yaml.safe_dump(front) + "---\nTune X.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a benchmark that starts a daemon")
    return root


def kernelopt(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kernelopt.cli", *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a signal to the test's group must not reach it
    )


def pids_in(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def wait_for(check, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return bool(check())


def all_dead(pids: list[int]) -> bool:
    return wait_for(lambda: not any(alive(p) for p in pids), timeout=5)


def notes(root: Path, run: str) -> dict[int, dict]:
    prefix = f"refs/kernelopt/{run}/attempts/"
    out = git(root, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
    found = {}
    for line in out.splitlines():
        name, sha = line.split()
        text = git(root, "notes", "--ref", "kernelopt", "show", sha, check=False)
        found[int(name[len(prefix) :])] = json.loads(text) if text else None
    return dict(sorted(found.items()))


def test_a_setsid_daemon_ends_with_the_measurement_that_started_it(tmp_path: Path) -> None:
    root = daemon_repo(tmp_path / "repo", [100, 80])
    daemons = tmp_path / "daemons"
    proc = kernelopt(root, "run", "d.md", "--tag", "t", env={"DAEMON_FILE": str(daemons)})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    started = pids_in(daemons)
    assert len(started) >= 2, started  # one daemon per measurement
    assert all_dead(started), [p for p in started if alive(p)]
    assert [n["verdict"] for n in notes(root, "d-t").values()] == ["baseline", "keep"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_measurement_of_run_is_recorded_and_kills_the_benchmark(
    tmp_path: Path, sig: signal.Signals
) -> None:
    root = daemon_repo(tmp_path / "repo", [100, "slow", 80])
    daemons, slow = tmp_path / "daemons", tmp_path / "slow"
    env = {"DAEMON_FILE": str(daemons), "SLOW_FILE": str(slow)}
    proc = kernelopt(root, "run", "d.md", "--tag", "t", env=env)
    assert wait_for(lambda: bool(pids_in(slow))), proc.communicate(timeout=5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 128 + sig, (out, err)
    assert f"interrupted by {sig.name}" in err
    assert "Traceback" not in err
    recorded = notes(root, "d-t")
    assert [n["verdict"] for n in recorded.values()] == ["baseline", "interrupted"]
    assert recorded[1]["error"] == f"interrupted by {sig.name}"
    assert all_dead(pids_in(slow) + pids_in(daemons))
    # The branch is back at BEST and the run resumes where it stopped.
    again = kernelopt(root, "run", "d.md", "--tag", "t", env={"DAEMON_FILE": str(daemons)})
    again.communicate(timeout=120)
    assert again.returncode == 0
    assert [n["verdict"] for n in notes(root, "d-t").values()][-1] == "keep"
    assert all_dead(pids_in(daemons))


def test_sigterm_mid_measurement_of_try_is_recorded_and_kills_the_benchmark(
    tmp_path: Path,
) -> None:
    root = daemon_repo(tmp_path / "repo", [100, 80])
    daemons, slow = tmp_path / "daemons", tmp_path / "slow"
    env = {"DAEMON_FILE": str(daemons), "SLOW_FILE": str(slow)}
    first = kernelopt(root, "run", "d.md", "--tag", "t", "--max-candidates", "0", env=env)
    assert first.wait(60) == 0
    worktree = root / ".git" / "kernelopt" / "worktrees" / "d-t"
    (worktree / "knobs.json").write_text('{"X": "slow"}\n')
    proc = kernelopt(worktree, "try", "-m", "a slow one", "--json", env=env)
    assert wait_for(lambda: bool(pids_in(slow))), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 15, (out, err)  # try's code for an interrupted attempt
    assert json.loads(out)["verdict"] == "interrupted"
    recorded = notes(root, "d-t")
    assert [n["verdict"] for n in recorded.values()] == ["baseline", "interrupted"]
    assert recorded[1]["error"] == "interrupted by SIGTERM"
    assert all_dead(pids_in(slow) + pids_in(daemons))


def test_a_daemon_left_by_a_sigkilled_runner_is_killed_by_the_next_holder(tmp_path: Path) -> None:
    root = daemon_repo(tmp_path / "repo", [100, "slow", 80])
    daemons, slow = tmp_path / "daemons", tmp_path / "slow"
    env = {"DAEMON_FILE": str(daemons), "SLOW_FILE": str(slow)}
    proc = kernelopt(root, "run", "d.md", "--tag", "t", env=env)
    assert wait_for(lambda: bool(pids_in(slow))), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    left = pids_in(daemons)[-1]  # the slow candidate's daemon
    assert alive(left), "the daemon should have outlived the SIGKILLed runner"

    # The rerun takes the lock, kills what the list names, then measures the
    # pending slow candidate again: the leftover daemon must be gone by then.
    slow_again = tmp_path / "slow-again"
    rerun = kernelopt(root, "run", "d.md", "--tag", "t", env={"SLOW_FILE": str(slow_again)})
    assert wait_for(lambda: bool(pids_in(slow_again)))
    assert not alive(left)
    rerun.send_signal(signal.SIGTERM)
    rerun.communicate(timeout=60)
    assert all_dead([left, *pids_in(slow), *pids_in(slow_again)])
