"""`kernelopt gate` over the fake tools: text, JSON and the exit code."""

from __future__ import annotations

import json
import os

from click.testing import CliRunner
from fake_tools import FakeTools, neuron_device

from kernelopt.devices.cli import gate_command


def invoke(fakes: FakeTools, *args: str):
    env = {"PATH": f"{fakes.bin_dir}:{os.environ['PATH']}"}
    return CliRunner().invoke(gate_command, list(args), env=env)


def test_exit_zero_when_a_device_is_idle(fakes: FakeTools) -> None:
    fakes.set("neuron", devices=[neuron_device(0, busy_pid=4040), neuron_device(1)], utilization={})
    result = invoke(fakes, "--kind", "neuron")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "neuron:0" in lines[0] and "BUSY" in lines[0]
    assert "pid 4040" in lines[1]
    assert "neuron:1" in lines[2] and "idle" in lines[2] and "NEURON_RT_VISIBLE_CORES=8" in lines[2]


def test_exit_one_when_all_busy_and_json_lists_processes(fakes: FakeTools) -> None:
    fakes.set(
        "nvidia",
        gpus=[{"index": 0, "uuid": "GPU-z", "util": 3, "mem": 100, "total": 1}],
        apps=[{"uuid": "GPU-z", "pid": 77, "name": "train", "mem": 100}],
    )
    result = invoke(fakes, "--kind", "nvidia", "--json")
    assert result.exit_code == 1
    (device,) = json.loads(result.output)
    assert device["idle"] is False and device["processes"][0]["pid"] == 77
    assert device["utilization"] == 3.0 and device["binding"] == {"CUDA_VISIBLE_DEVICES": "GPU-z"}


def test_auto_detects_the_installed_tool(fakes: FakeTools) -> None:
    fakes.remove("neuron-ls")
    fakes.remove("nvidia-smi")
    fakes.set("rocm", cards=[{"use": 0, "vram": 0}])
    result = invoke(fakes, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)[0]["kind"] == "rocm"


def test_gate_error_is_a_clear_message(fakes: FakeTools) -> None:
    fakes.set("rocm", cards=[{"use": 0, "vram": 0}], output="malformed")
    result = invoke(fakes, "--kind", "rocm")
    assert result.exit_code == 1
    assert "Error: `rocm-smi --showuse --showmemuse --showpids --json` on host localhost" in (
        result.output
    )


def test_help_has_an_example() -> None:
    result = CliRunner().invoke(gate_command, ["--help"])
    assert (
        result.exit_code == 0 and "Example:" in result.output and "kernelopt gate" in result.output
    )
