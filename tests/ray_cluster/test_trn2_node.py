"""On a Trn2 node (the fake toolchain): the node's gate leases a NeuronCore and the
shipped kernel tree is measured by the same NeuronTarget code as kernelopt.remote."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from kernelopt.executor import tar_tree
from kernelopt.measurement import Measurement
from kernelopt.neuron.target import NeuronTarget
from kernelopt.ray_executor import NodeMeasurer
from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"


def kernel_tree(root: Path) -> Path:
    folder = root / "ir" / "small"
    folder.mkdir(parents=True)
    shutil.copy(KERNELS / "workload.py", folder / "workload.py")
    shutil.copy(KERNELS / "kernel.py", folder / "kernel.py")
    return root


def test_the_node_leases_a_neuron_core_and_measures_the_shipped_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeTrn2(tmp_path / "fake-trn2").install()
    fake.configure(monitor_period_s=0.1)
    monkeypatch.setenv("PATH", f"{fake.bin_dir}:{os.environ['PATH']}")
    sender = NeuronTarget.from_spec(
        {
            "workload": "ir/small/workload.py",
            "kernel": "ir/small/kernel.py",
            "settings": {"activate": str(fake.activate_path), "iterations": 3, "warmup": 1},
            "python": sys.executable,
        }
    )
    spec = {**sender.spec(), "results_dir": str(tmp_path / "node-results")}
    node = NodeMeasurer("neuron", poll_s=0.05, max_wait_s=0.5, lock_dir=str(tmp_path / "locks"))
    info = node.ready()
    try:
        assert info.no_idle == "" and info.device.startswith("neuron:")
        cores = info.binding["NEURON_RT_VISIBLE_CORES"]
        tree = tar_tree(kernel_tree(tmp_path / "candidate"))
        m = Measurement.from_json(node.measure(spec, tree, info.binding))
    finally:
        node.release()
    assert m.status == "ok", m.error
    assert m.extra["visible_cores"] == cores and m.extra["iterations"] == 3
    profilers = ("neuron-explorer", "neuron-profile")  # whichever the SDK layout ships
    assert any(c["args"][0] == "capture" for tool in profilers for c in fake.calls(tool))
    assert fake.calls("neuron-ls")  # the gate looked at the node's devices
