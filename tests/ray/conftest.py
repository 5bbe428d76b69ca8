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

# X from knobs.json is the metric. With PEERS (a folder baked in by the
# test) each run leaves its pid in PEERS/running while it runs and in
# PEERS/arrived for good; with MEET it first waits (up to 10 s, half the
# command's timeout) until MEET runs have arrived and prints whether they met:
# runs that all met were running at once, as none leaves before the last
# arrives. After its sleep it prints how many runs it saw running ("peers"). While
# MARKER (an absolute path) does not exist, it writes the pid of the Ray
# worker running it there and sends that worker SIGNAL, once: SIGKILL is a
# node lost mid-measurement, SIGSTOP a node that hangs.
BENCH = """
import json, os, signal, time
MARKER, SIGNAL, PEERS, MEET = {marker!r}, {signal!r}, {peers!r}, {meet!r}
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
if PEERS:
    arrived, running = os.path.join(PEERS, "arrived"), os.path.join(PEERS, "running")
    os.makedirs(arrived, exist_ok=True)
    os.makedirs(running, exist_ok=True)
    mine = os.path.join(running, str(os.getpid()))
    open(mine, "w").close()
    open(os.path.join(arrived, str(os.getpid())), "w").close()
    deadline = time.monotonic() + 10
    while MEET and len(os.listdir(arrived)) < MEET and time.monotonic() < deadline:
        time.sleep(0.01)
    print(f"met: {{int(len(os.listdir(arrived)) >= MEET)}}")
time.sleep({latency})
if PEERS:
    print(f"peers: {{len(os.listdir(running))}}")
    os.remove(mine)
print(f"time: {{json.load(open('knobs.json'))['X']}}")
"""


def write_bench(
    tree: Path,
    *,
    latency: float = 0.3,
    marker: Path | None = None,
    signal: str = "SIGKILL",
    peers: Path | None = None,
    meet: int = 0,
) -> Path:
    """bench.py and knobs.json in ``tree``; returns the tree."""
    tree.mkdir(parents=True, exist_ok=True)
    text = BENCH.format(
        marker=str(marker or ""), signal=signal, latency=latency, peers=str(peers or ""), meet=meet
    )
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
