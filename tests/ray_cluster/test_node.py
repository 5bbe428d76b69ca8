"""The node side: the gate and locks choose the device, shipped trees are measured as data,
and `kernelopt gate` through Ray surveys every node."""

from __future__ import annotations

import importlib.util
import io
import socket
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from conftest import bench_target, write_bench

from kernelopt.executor import tar_tree
from kernelopt.measurement import Measurement
from kernelopt.program import RayConfig, load_program
from kernelopt.ray_executor import NodeMeasurer

HERE = Path(__file__).resolve().parent


def _load_fake_tools() -> Any:
    spec = importlib.util.spec_from_file_location(
        "kernelopt_ray_fake_tools", HERE.parent / "devices" / "fake_tools.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Fake nvidia-smi: GPU-a is used by a process outside Ray, GPU-b is idle."""
    tools = _load_fake_tools().FakeTools(tmp_path / "fakes")
    monkeypatch.setenv("PATH", f"{tools.bin_dir}:{__import__('os').environ['PATH']}")
    tools.set(
        "nvidia",
        gpus=[
            {"index": 0, "uuid": "GPU-a", "util": 97, "mem": 30000, "total": 40000},
            {"index": 1, "uuid": "GPU-b", "util": 0, "mem": 3, "total": 40000},
        ],
        apps=[{"uuid": "GPU-a", "pid": 4242, "name": "python3", "mem": 29000}],
    )
    return tools


def test_the_node_gate_takes_the_idle_device_and_locks_it(gpus: Any, tmp_path: Path) -> None:
    locks = str(tmp_path / "locks")
    first = NodeMeasurer("nvidia", poll_s=0.1, max_wait_s=0.3, lock_dir=locks)
    second = NodeMeasurer("nvidia", poll_s=0.1, max_wait_s=0.3, lock_dir=locks)
    held = first.ready()
    assert (held.device, held.no_idle) == ("nvidia:1", "")
    assert held.binding["CUDA_VISIBLE_DEVICES"] in ("GPU-b", "1")
    refused = second.ready()  # GPU-a is busy outside Ray, GPU-b is locked by `first`
    assert "busy" in refused.no_idle and "locked" in refused.no_idle
    first.release()
    assert second.ready().device == "nvidia:1"
    second.release()


def test_a_shipped_tree_is_measured_and_a_bad_one_is_a_failure_not_an_exception(
    tmp_path: Path,
) -> None:
    node = NodeMeasurer("none", poll_s=1.0, max_wait_s=1.0, lock_dir=None)
    target = bench_target()
    tree = write_bench(tmp_path / "tree", latency=0.0)
    good = Measurement.from_json(node.measure(target.spec(), tar_tree(tree), {}))
    assert good.ok and good.metrics["time"] == 100
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        escaping = tarfile.TarInfo("../outside.py")
        escaping.size = 0
        tar.addfile(escaping, io.BytesIO(b""))
    bad = Measurement.from_json(node.measure(target.spec(), buffer.getvalue(), {}))
    assert not bad.ok and "outside" in bad.error
    assert not (tmp_path / "outside.py").exists()


def _program(tmp_path: Path, kind: str) -> Any:
    path = tmp_path / "p.md"
    path.write_text(
        "---\nname: g\ntarget: {kind: command, command: 'true', results: {format: stdout}}\n"
        f"metric: {{name: t, better: lower}}\ndevice: {{kind: {kind}, executor: ray}}\n---\n"
    )
    return load_program(path, root=tmp_path)


def test_gate_through_ray_surveys_each_node(ray_cluster: Any, tmp_path: Path) -> None:
    from kernelopt.ray_executor import ray_survey

    [status] = ray_survey(_program(tmp_path, "none"))  # the fixture cluster has one node
    assert (status.host, status.device, status.idle) == (socket.gethostname(), "machine", True)


def test_a_node_whose_gate_fails_is_reported_busy_with_the_reason(
    ray_cluster: Any, tmp_path: Path
) -> None:
    from kernelopt.ray_executor import ray_survey

    # The cluster's workers have no rocm-smi on their PATH.
    [status] = ray_survey(_program(tmp_path, "rocm"))
    assert not status.idle and "survey failed" in status.reason and "rocm-smi" in status.reason


def test_a_cluster_whose_nodes_cannot_gate_gives_no_idle_device(ray_cluster: Any) -> None:
    from kernelopt.executor import NoIdleDeviceError
    from kernelopt.ray_executor import RayExecutor

    executor = RayExecutor(
        RayConfig(task_timeout_s=10.0),
        gate_kind="rocm",
        resources={"neuron_cores": 1},
        poll_s=0.1,
        max_wait_s=0.2,
    ).connect()
    with pytest.raises(NoIdleDeviceError, match="rocm-smi"), executor.device():
        pass
