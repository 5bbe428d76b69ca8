"""RayExecutor on a real local Ray cluster: parallel batches, resource limits, lost workers."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from conftest import DEVICES, bench_target, write_bench  # noqa: E402

from kernelopt.executor import HostFault, NoIdleDeviceError  # noqa: E402
from kernelopt.measurement import Measurement  # noqa: E402
from kernelopt.program import RayConfig  # noqa: E402
from kernelopt.ray_executor import RayExecutor, RayExecutorError  # noqa: E402


def executor(resources: dict[str, float], **options: Any) -> RayExecutor:
    config = RayConfig(task_timeout_s=options.pop("task_timeout_s", 30.0))
    options.setdefault("poll_s", 1.0)
    options.setdefault("max_wait_s", 30.0)
    return RayExecutor(config, gate_kind="none", resources=resources, **options).connect()


def peers(m: Measurement) -> int:
    """How many runs of the benchmark ran at once with this one (itself included)."""
    return int(m.rows[0]["peers"])


def measure_in_threads(jobs: list[Any]) -> list[Any]:
    out: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        try:
            out[i] = jobs[i]()
        except Exception as exc:  # kept for the assertion
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return out


def test_slots_count_devices_worth_of_resources(ray_cluster: Any) -> None:
    assert executor({"neuron_cores": 1}).slots == DEVICES
    assert executor({"neuron_cores": 2}).slots == 1


def test_a_batch_is_measured_in_parallel_on_distinct_devices(
    ray_cluster: Any, tmp_path: Path
) -> None:
    tree = write_bench(tmp_path / "tree", latency=0.0, peers=tmp_path / "peers", meet=DEVICES)
    target = bench_target()
    with executor({"neuron_cores": 1}).devices(DEVICES) as devices:
        assert len(devices) == DEVICES
        assert len({d.name for d in devices}) == DEVICES  # each holds its own core
        results = measure_in_threads([lambda d=d: d.measure(target, tree) for d in devices])
    assert all(isinstance(m, Measurement) and m.ok for m in results), results
    assert {m.device for m in results} == {"ray:neuron_cores=0", "ray:neuron_cores=1"}
    # Both waited at a barrier for the other: they ran at once.
    assert [m.rows[0]["met"] for m in results] == [1, 1]


def test_never_more_concurrent_measurements_than_devices(ray_cluster: Any, tmp_path: Path) -> None:
    tree = write_bench(tmp_path / "tree", latency=0.3, peers=tmp_path / "peers")
    target = bench_target()
    ex = executor({"neuron_cores": 1})

    def judge() -> list[Measurement]:
        with ex.device() as device:  # held for two measurements, like a paired judgement
            return [device.measure(target, tree), device.measure(target, tree)]

    results = measure_in_threads([judge] * 5)
    measurements = [m for pair in results for m in pair]
    assert all(m.ok for m in measurements), results
    assert max(peers(m) for m in measurements) <= DEVICES


def test_a_device_of_two_cores_runs_one_measurement_at_a_time(
    ray_cluster: Any, tmp_path: Path
) -> None:
    tree = write_bench(tmp_path / "tree", latency=0.2, peers=tmp_path / "peers")
    target = bench_target()
    ex = executor({"neuron_cores": 2})

    def judge() -> Measurement:
        with ex.device() as device:
            return device.measure(target, tree)

    results = measure_in_threads([judge] * 3)
    assert all(m.ok for m in results), results
    assert max(peers(m) for m in results) == 1


def test_a_worker_killed_mid_measurement_is_a_host_fault_and_the_next_device_works(
    ray_cluster: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    tree = write_bench(tmp_path / "tree", latency=0.1, marker=marker)
    ex = executor({"neuron_cores": 1})
    with pytest.raises(HostFault, match="Actor") as fault, ex.device() as device:
        device.measure(bench_target(), tree)
    assert marker.exists()
    assert str(fault.value).startswith(f"{device.host_name}: ")
    with ex.device() as device:  # a fresh worker; the marker stops the benchmark killing again
        assert device.measure(bench_target(), tree).ok


def test_a_full_cluster_gives_no_idle_device_after_max_wait(ray_cluster: Any) -> None:
    # The cluster is filled with the usual patience (a worker takes seconds to start);
    # only the second executor is impatient.
    holder = executor({"neuron_cores": 1})
    ex = executor({"neuron_cores": 1}, max_wait_s=0.5, poll_s=0.25, task_timeout_s=0.5)
    waits: list[Any] = []
    ex.on_wait = waits.append
    with holder.devices(DEVICES) as held:
        assert len(held) == DEVICES
        with pytest.raises(NoIdleDeviceError, match="neuron_cores"), ex.device():
            pass
    assert waits and "every device in the cluster is taken" in waits[0].reason
    with holder.device() as device:  # released devices are free again
        assert device.name.startswith("ray:neuron_cores=")


def test_a_batch_larger_than_the_cluster_gets_the_devices_there_are(ray_cluster: Any) -> None:
    ex = executor({"neuron_cores": 1}, gather_s=0.5)
    with ex.devices(DEVICES + 2) as held:
        assert len(held) == DEVICES


def test_resources_the_cluster_lacks_are_named(ray_cluster: Any) -> None:
    with pytest.raises(RayExecutorError, match=r"GPU.*neuron_cores=2"):
        executor({"GPU": 1.0})


def test_a_node_that_stops_answering_is_a_host_fault_not_a_hang(
    ray_cluster: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "frozen"
    tree = write_bench(tmp_path / "tree", latency=0.1, marker=marker, signal="SIGSTOP")
    ex = executor({"neuron_cores": 1}, task_timeout_s=0.5)
    with ex.device() as device:
        try:
            with pytest.raises(HostFault, match=r"no answer .* within 1\.5s"):
                device.measure(bench_target(timeout_s=1.0), tree)
        finally:
            if marker.exists():  # let the worker go, so that it can be released
                os.kill(int(marker.read_text()), signal.SIGCONT)
