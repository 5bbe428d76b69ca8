"""One local Ray cluster for the whole tests/ray session (Ray takes seconds to start).

It has 2 CPUs and 2 ``neuron_cores`` standing in for a Trn2 node's cores; the
measured command is a fixed-latency benchmark that records when it ran.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DEVICES = 2

# Prints its start and end (wall clock) so tests can check overlap; X from
# knobs.json is the metric. While MARKER (an absolute path baked in by the
# test) does not exist, it writes the pid of the Ray worker running it there
# and sends that worker SIGNAL, once: SIGKILL is a node lost mid-measurement,
# SIGSTOP a node that hangs.
BENCH = """
import json, os, signal, time
MARKER, SIGNAL = {marker!r}, {signal!r}
t0 = time.time()
if MARKER and not os.path.exists(MARKER):
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{{pid}}/cmdline", "rb") as f:
            if f.read().startswith(b"ray::"):
                break
        with open(f"/proc/{{pid}}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    open(MARKER, "w").write(str(pid))
    os.kill(pid, getattr(signal, SIGNAL))
    if SIGNAL == "SIGKILL":
        time.sleep(30)
time.sleep({latency})
print(f"t0: {{t0}}")
print(f"t1: {{time.time()}}")
print(f"time: {{json.load(open('knobs.json'))['X']}}")
"""


def write_bench(
    tree: Path, *, latency: float = 0.3, marker: Path | None = None, signal: str = "SIGKILL"
) -> Path:
    """bench.py and knobs.json in ``tree``; returns the tree."""
    tree.mkdir(parents=True, exist_ok=True)
    text = BENCH.format(marker=str(marker or ""), signal=signal, latency=latency)
    (tree / "bench.py").write_text(text)
    (tree / "knobs.json").write_text('{"X": 100}\n')
    return tree


def bench_target(timeout_s: float = 20.0) -> Any:
    from kernelopt.targets import LocalCommand
    from kernelopt.targets.command import CommandTarget, ResultsSpec

    # -S: the benchmark needs only the standard library and starts faster.
    command = CommandTarget(
        command=f"{sys.executable} -S bench.py",
        metric="time",
        better="lower",
        results=ResultsSpec("stdout", None),
        timeout_s=timeout_s,
    )
    return LocalCommand(command)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local",
        num_cpus=2,
        resources={"neuron_cores": DEVICES},
        include_dashboard=False,
        log_to_driver=False,
    )
    yield ray
    ray.shutdown()
