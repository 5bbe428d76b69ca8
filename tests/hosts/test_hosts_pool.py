"""HostPool: order, one job per device at a time, host faults retried elsewhere."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from sshd_server import KILL_OWN_SESSION, LoopbackSSHD

from kernelopt.hosts import Host, HostPool, LocalHost, SSHHost


def local_pool(count: int) -> HostPool[str]:
    return HostPool([(LocalHost(f"h{n}"), f"dev{n}") for n in range(count)])


def test_results_come_back_in_job_order_and_use_every_slot() -> None:
    def measure(job: int, host: Host, lease: str) -> int:
        time.sleep(0.01 * (job % 3))
        return job * job

    results = local_pool(3).map(list(range(12)), measure)
    assert [r.value for r in results] == [n * n for n in range(12)]
    assert [r.index for r in results] == list(range(12))
    assert all(r.ok and r.attempts == 1 for r in results)
    assert len({r.host for r in results}) == 3


def test_never_two_jobs_on_one_device_at_once() -> None:
    active: Counter[str] = Counter()
    peak: Counter[str] = Counter()
    guard = threading.Lock()

    def measure(job: int, host: Host, lease: str) -> None:
        with guard:
            active[lease] += 1
            peak[lease] = max(peak[lease], active[lease])
        time.sleep(0.005)
        with guard:
            active[lease] -= 1

    local_pool(4).map(list(range(40)), measure)
    assert set(peak.values()) == {1}


def test_jobs_run_concurrently_across_slots() -> None:
    # Each job waits for all four to be running at once; serial execution breaks the barrier.
    barrier = threading.Barrier(4, timeout=10)
    results = local_pool(4).map(list(range(4)), lambda job, host, lease: barrier.wait())
    assert all(r.ok for r in results)


def test_slots_sharing_one_ssh_host_run_at_the_same_time(ssh_host: SSHHost, tmp_path: Path) -> None:
    def measure(job: str, host: Host, lease: str) -> bool:
        other = "b" if job == "a" else "a"
        script = f"touch {job}; until [ -e {other} ]; do sleep 0.01; done"
        return host.run(["sh", "-c", script], cwd=str(tmp_path), timeout=10).ok

    results = HostPool([(ssh_host, "neuron:0"), (ssh_host, "neuron:1")]).map(["a", "b"], measure)
    assert [r.value for r in results] == [True, True]
    assert {r.device for r in results} == {"neuron:0", "neuron:1"}


def test_host_fault_is_retried_once_on_another_slot() -> None:
    def measure(job: int, host: Host, lease: str) -> str:
        if host.name == "h0":
            raise ConnectionResetError("transport dropped")
        return f"{job}@{host.name}"

    results = local_pool(2).map([0, 1, 2, 3], measure)
    assert all(r.ok and r.host == "h1" for r in results)
    assert [r.value for r in results] == [f"{n}@h1" for n in range(4)]
    assert any(r.attempts == 2 for r in results)


def test_fault_everywhere_is_a_failure_marked_host_fault() -> None:
    def measure(job: int, host: Host, lease: str) -> str:
        raise OSError(f"broken {host.name}")

    (result,) = local_pool(2).map(["job"], measure)
    assert result.host_fault and not result.ok and result.value is None
    assert result.attempts == 2 and "OSError: broken" in result.error


def test_single_slot_retries_on_itself() -> None:
    calls: list[int] = []

    def measure(job: int, host: Host, lease: str) -> int:
        calls.append(job)
        if len(calls) == 1:
            raise EOFError("dropped")
        return job

    (result,) = local_pool(1).map([7], measure)
    assert result.value == 7 and result.attempts == 2 and calls == [7, 7]


def test_empty_batch() -> None:
    assert local_pool(2).map([], lambda job, host, lease: job) == []


def test_killed_ssh_session_retries_the_job_on_another_host(sshd: LoopbackSSHD) -> None:
    hosts = [SSHHost(alias, config_path=sshd.ssh_config) for alias in ("gym-1", "gym-2")]
    killed: list[str] = []

    def measure(job: int, host: Host, lease: str) -> str:
        if host.name == "gym-1" and not killed:
            killed.append(host.name)
            host.run(KILL_OWN_SESSION)
        return host.run(["echo", f"job{job}"]).stdout.strip()

    results = HostPool([(hosts[0], "neuron:0"), (hosts[1], "neuron:0")]).map([0, 1], measure)
    retried = [r for r in results if r.attempts == 2]
    assert killed == ["gym-1"] and len(retried) == 1
    assert retried[0].host == "gym-2" and retried[0].ok
    assert [r.value for r in results] == ["job0", "job1"]
    for host in hosts:
        host.close()


def test_system_exit_in_a_job_stops_the_batch_without_hanging() -> None:
    def measure(job: int, host: Host, lease: str) -> int:
        if job == 0:
            raise SystemExit("stop requested")
        return job

    with pytest.raises(SystemExit, match="stop requested"):
        local_pool(2).map([0, 1, 2, 3], measure)


def test_dead_hosts_retire_so_the_healthy_one_gets_the_work() -> None:
    calls: Counter[str] = Counter()
    guard = threading.Lock()

    def measure(job: int, host: Host, lease: str) -> str:
        with guard:
            calls[host.name] += 1
        if host.name != "h2":
            raise ConnectionRefusedError(f"{host.name} is down")
        time.sleep(0.002)
        return host.name

    results = local_pool(3).map(list(range(12)), measure)
    # each dead host is tried at most twice in a row, then takes no more jobs
    assert calls["h0"] <= 2 and calls["h1"] <= 2
    # so at most two jobs can have met both dead hosts; everything else ran on h2
    ok = [r for r in results if r.ok]
    assert len(ok) >= 10 and {r.value for r in ok} == {"h2"}
    assert calls["h2"] == len(ok)


def test_when_every_host_is_dead_all_jobs_fail_as_host_faults() -> None:
    def measure(job: int, host: Host, lease: str) -> str:
        raise ConnectionRefusedError(f"{host.name} is down")

    results = local_pool(2).map(list(range(6)), measure)
    assert all(r.host_fault and "is down" in r.error for r in results)
