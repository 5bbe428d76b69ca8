"""HostPool over N SSH aliases of a loopback sshd, one fake device each.

Each job is a fixed-latency fake measurement (`sleep 0.5` through host.run);
a batch of 4N jobs shows the pool's overhead: total time, the fraction of time
devices were held by a running job ("busy": measure_fn time, including the SSH
round trip and remote shell start-up), the fraction spent in the fake
measurement itself ("work"), and throughput relative to N=1.

    python benchmarks/hosts.py [--latency 0.5] [--sizes 1,2,4]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

from kernelopt.hosts import Host, HostPool, SSHHost

ROOT = Path(__file__).resolve().parents[1]


def _load_sshd():  # the loopback server lives with the tests
    spec = importlib.util.spec_from_file_location(
        "sshd_server", ROOT / "tests/hosts/sshd_server.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["sshd_server"] = module
    spec.loader.exec_module(module)
    return module


def run_batch(hosts: list[SSHHost], latency: float) -> tuple[float, float, int]:
    slots = [(host, f"fake:{n}") for n, host in enumerate(hosts)]
    jobs = list(range(4 * len(hosts)))

    def measure(job: int, host: Host, lease: str) -> int:
        result = host.run(["sleep", str(latency)], env={"FAKE_DEVICE": lease}, timeout=30)
        return result.returncode

    started = time.monotonic()
    results = HostPool(slots).map(jobs, measure)
    total = time.monotonic() - started
    assert all(r.ok and r.value == 0 for r in results), results
    busy = sum(r.busy_s for r in results)
    return total, busy / (total * len(hosts)), len(jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--sizes", default="1,2,4")
    args = parser.parse_args()
    sshd_module = _load_sshd()
    reason = sshd_module.sshd_missing_reason()
    if reason:
        sys.exit(f"cannot run: {reason}")
    sizes = [int(s) for s in args.sizes.split(",")]
    aliases = tuple(f"bench-{n}" for n in range(max(sizes)))
    server = sshd_module.LoopbackSSHD(Path(tempfile.mkdtemp()), aliases).start()
    try:
        print(f"fake measurement latency {args.latency}s, batch = 4N jobs")
        print(
            f"{'N':>3} {'jobs':>5} {'total s':>8} {'ideal s':>8} {'busy %':>7} {'work %':>7} "
            f"{'jobs/s':>7} {'scaling':>8} {'goal':>6}"
        )
        base = None
        for size in sizes:
            hosts = [SSHHost(a, config_path=server.ssh_config) for a in aliases[:size]]
            for host in hosts:
                host.connect()  # connection set-up is a once-per-run cost, not per job
            total, busy, jobs = run_batch(hosts, args.latency)
            throughput = jobs / total
            base = base or throughput
            scaling = throughput / base
            goal = "ok" if busy >= 0.9 and scaling >= 0.8 * size else "MISS"
            work = jobs * args.latency / (total * size)
            print(
                f"{size:>3} {jobs:>5} {total:>8.2f} {4 * args.latency:>8.2f} "
                f"{100 * busy:>6.1f}% {100 * work:>6.1f}% {throughput:>7.2f} {scaling:>7.2f}x {goal:>6}"
            )
            for host in hosts:
                host.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
