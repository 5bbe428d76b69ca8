"""The Ray executor against the SSH pool, on the same fixed-latency fake measurement.

Both sides measure a batch of 4N jobs on N fake devices, the way a run
measures a batch (HostPool hands jobs to devices as they free up):

- ssh: benchmarks/hosts.py's machinery, N SSH aliases of a loopback sshd, each
  job a `sleep LATENCY` through host.run;
- ray: one local Ray cluster with 4 `fake_device` resources; RayExecutor holds
  N devices (actors), each job a command-target measurement of `sleep LATENCY`
  in a shipped tree (tar, unpack, run, parse: the full path of a candidate).

Printed per N: wall time, jobs/s, scaling vs N=1, and the overhead per job
beyond the fake measurement itself. "start s" is the time to get N devices
(Ray: actors scheduled and started; ssh: connections opened).

    python benchmarks/ray.py [--latency 0.5] [--sizes 1,2,4]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
# Run as a script, this file's folder comes first on sys.path and `import ray`
# would find this file instead of Ray.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT]


def _load_hosts_benchmark() -> Any:
    spec = importlib.util.spec_from_file_location("bench_hosts", ROOT / "hosts.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ssh_rows(sizes: list[int], latency: float) -> tuple[list[tuple[int, float, float, int]], str]:
    """(N, start s, total s, jobs) per size through the SSH pool, or why it cannot run."""
    hosts_bench = _load_hosts_benchmark()
    sshd_module = hosts_bench._load_sshd()
    reason = sshd_module.sshd_missing_reason()
    if reason:
        return [], reason
    from kernelopt.hosts import SSHHost

    aliases = tuple(f"bench-{n}" for n in range(max(sizes)))
    server = sshd_module.LoopbackSSHD(Path(tempfile.mkdtemp()), aliases).start()
    rows = []
    try:
        for size in sizes:
            started = time.monotonic()
            hosts = [SSHHost(a, config_path=server.ssh_config) for a in aliases[:size]]
            for host in hosts:
                host.connect()
            start_s = time.monotonic() - started
            total, _busy, jobs = hosts_bench.run_batch(hosts, latency)
            rows.append((size, start_s, total, jobs))
            for host in hosts:
                host.close()
    finally:
        server.stop()
    return rows, ""


def ray_rows(sizes: list[int], latency: float) -> list[tuple[int, float, float, int]]:
    """(N, start s, total s, jobs) per size through RayExecutor on a local cluster."""
    import ray

    from kernelopt.hosts.pool import HostPool
    from kernelopt.program import RayConfig
    from kernelopt.ray_executor import RayExecutor
    from kernelopt.targets import LocalCommand
    from kernelopt.targets.command import CommandTarget, ResultsSpec

    ray.init(
        address="local",
        num_cpus=2,
        resources={"fake_device": max(sizes)},
        include_dashboard=False,
        log_to_driver=False,
    )
    tree = Path(tempfile.mkdtemp()) / "tree"
    tree.mkdir()
    (tree / "README").write_text("a candidate's tree\n")
    target = LocalCommand(
        CommandTarget(
            command=f"sleep {latency} && echo 'time: 1'",
            metric="time",
            better="lower",
            results=ResultsSpec("stdout", None),
            timeout_s=60,
        )
    )
    executor = RayExecutor(
        RayConfig(task_timeout_s=60), gate_kind="none", resources={"fake_device": 1}
    ).connect()
    rows = []
    try:
        for size in sizes:
            jobs = list(range(4 * size))
            started = time.monotonic()
            with executor.devices(size) as devices:
                start_s = time.monotonic() - started
                assert len(devices) == size, devices
                pool = HostPool([(_Named(d.name), d) for d in devices])
                began = time.monotonic()
                results = pool.map(jobs, lambda _job, _host, device: device.measure(target, tree))
                total = time.monotonic() - began
            assert all(r.ok and r.value is not None and r.value.ok for r in results), results
            rows.append((size, start_s, total, len(jobs)))
    finally:
        ray.shutdown()
    return rows


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--sizes", default="1,2,4")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ssh, why_not = ssh_rows(sizes, args.latency)
    rayed = ray_rows(sizes, args.latency)
    print(f"fake measurement latency {args.latency}s, batch = 4N jobs, ideal = 4 x latency")
    print(
        f"{'pool':>4} {'N':>3} {'jobs':>5} {'start s':>8} {'total s':>8} {'ideal s':>8} "
        f"{'jobs/s':>7} {'scaling':>8} {'overhead/job s':>15}"
    )
    for name, rows in (("ssh", ssh), ("ray", rayed)):
        base = None
        for size, start_s, total, jobs in rows:
            throughput = jobs / total
            base = base or throughput
            overhead = (total * size - jobs * args.latency) / jobs
            print(
                f"{name:>4} {size:>3} {jobs:>5} {start_s:>8.2f} {total:>8.2f} "
                f"{4 * args.latency:>8.2f} {throughput:>7.2f} {throughput / base:>7.2f}x "
                f"{overhead:>15.3f}"
            )
    if why_not:
        print(f"ssh: not measured ({why_not})", file=sys.stderr)


if __name__ == "__main__":
    main()
