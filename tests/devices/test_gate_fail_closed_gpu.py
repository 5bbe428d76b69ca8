"""Unknown is busy for GPUs too: nvidia-smi and rocm-smi values that are not a percentage."""

from __future__ import annotations

import pytest
from fake_tools import FakeTools

from kernelopt.devices import GateError
from kernelopt.devices.nvidia import NvidiaGate
from kernelopt.devices.rocm import RocmGate
from kernelopt.hosts import LocalHost

HOST = LocalHost("box")


def gpu(util: object) -> dict[str, object]:
    return {"index": 0, "uuid": "GPU-0000", "util": util, "mem": 3, "total": 81559}


@pytest.mark.parametrize("util", ["NaN", "[N/A]", "[Not Supported]", "-1", "250"])
def test_nvidia_unknown_utilization_is_busy(fakes: FakeTools, util: str) -> None:
    fakes.set("nvidia", gpus=[gpu(util)], apps=[])
    status = NvidiaGate(search_path=[str(fakes.bin_dir)]).survey(HOST)[0]
    assert not status.idle and status.utilization is None
    assert status.reason.startswith("utilization unknown: utilization.gpu")


def test_failing_nvidia_smi_is_a_gate_error(fakes: FakeTools) -> None:
    fakes.set("nvidia", gpus=[gpu(0)], apps=[], output="fail")
    with pytest.raises(GateError, match=r"exit code 9: NVIDIA-SMI has failed"):
        NvidiaGate(search_path=[str(fakes.bin_dir)]).survey(HOST)


@pytest.mark.parametrize(
    ("card", "key"),
    [
        ({"use": "NaN", "vram": 0}, "GPU use"),
        ({"use": "N/A", "vram": 0}, "GPU use"),
        ({"use": 0, "vram": "N/A"}, "VRAM"),
        ({"use": 0, "vram": "nan"}, "VRAM"),
        ({"use": 101, "vram": 0}, "GPU use"),
    ],
)
def test_rocm_unknown_use_or_vram_is_busy(
    fakes: FakeTools, card: dict[str, object], key: str
) -> None:
    fakes.set("rocm", cards=[card])
    status = RocmGate(search_path=[str(fakes.bin_dir)]).survey(HOST)[0]
    assert not status.idle
    assert status.reason.startswith("unknown: ") and key in status.reason


def test_failing_rocm_smi_is_a_gate_error(fakes: FakeTools) -> None:
    fakes.set("rocm", cards=[{"use": 0, "vram": 0}], output="fail")
    with pytest.raises(GateError, match=r"exit code 1: .*Driver not initialized"):
        RocmGate(search_path=[str(fakes.bin_dir)]).survey(HOST)
