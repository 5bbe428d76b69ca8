"""Each gate against its fake tool: formats, busy rules, bindings and errors."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fake_tools import OWN_PROCESSES, FakeTools, neuron_device

from kernelopt.devices import GateError
from kernelopt.devices.neuron import NeuronGate, parse_neuron_ls
from kernelopt.devices.nvidia import NvidiaGate
from kernelopt.devices.rocm import RocmGate
from kernelopt.hosts import LocalHost

HOST = LocalHost("box")


def neuron(fakes: FakeTools, **options: object) -> NeuronGate:
    options.setdefault("process_table", OWN_PROCESSES)
    return NeuronGate(search_path=[str(fakes.bin_dir)], **options)  # type: ignore[arg-type]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


# -- neuron ---------------------------------------------------------------------


def test_neuron_idle_and_busy_devices_with_new_format(fakes: FakeTools) -> None:
    fakes.set("neuron", devices=[neuron_device(0), neuron_device(1, busy_pid=31337)])
    statuses = neuron(fakes).survey(HOST)
    assert [(s.device, s.idle) for s in statuses] == [("0", True), ("1", False)]
    assert statuses[0].binding == {"NEURON_RT_VISIBLE_CORES": "0", "NEURON_LOGICAL_NC_CONFIG": "1"}
    assert statuses[1].processes[0].pid == 31337
    assert "31337" in statuses[1].reason
    assert fakes.calls == ["neuron-ls --output-format json"]


def test_neuron_falls_back_to_json_output_when_output_format_is_refused(fakes: FakeTools) -> None:
    fakes.set("neuron", format="old", devices=[neuron_device(0)])
    statuses = neuron(fakes).survey(HOST)
    assert [s.idle for s in statuses] == [True]
    assert fakes.calls == ["neuron-ls --output-format json", "neuron-ls --json-output"]


def test_neuron_device_list_under_an_unknown_wrapper_key(fakes: FakeTools) -> None:
    fakes.set("neuron", wrap_key="devices_v2", devices=[neuron_device(0), neuron_device(1)])
    assert [s.device for s in neuron(fakes).survey(HOST)] == ["0", "1"]


def test_neuron_idle_device_without_processes_key(fakes: FakeTools) -> None:
    spec = neuron_device(0)
    spec["omit_processes_key"] = True
    fakes.set("neuron", devices=[spec])
    assert neuron(fakes).survey(HOST)[0].idle


def test_neuron_ignores_tool_processes_and_own_pids(fakes: FakeTools) -> None:
    spec = neuron_device(0)
    spec["processes"] = [
        {"pid": 11, "command": "neuron-ls --json-output", "version": "NA"},
        {"pid": 13, "command": "/opt/aws/neuron/bin/neuron-top", "version": "2.23"},
        {"pid": 12, "command": "python3 ours.py"},
    ]
    fakes.set("neuron", devices=[spec])
    assert not neuron(fakes).survey(HOST)[0].idle
    status = neuron(fakes, ignore_pids=frozenset({12})).survey(HOST)[0]
    assert status.idle and status.processes == ()


def test_neuron_leftover_compiler_process_makes_the_device_busy(fakes: FakeTools) -> None:
    # neuron-ls reports no runtime version for a compiler; it still breaks the runtime there.
    left = neuron_device(0)
    left["processes"] = [
        {"pid": 21, "command": "/opt/venv/bin/neuronx-cc compile k.json", "version": "NA"}
    ]
    walrus = neuron_device(1)
    walrus["processes"] = [{"pid": 22, "command": "walrus_driver --neff x", "version": "NA"}]
    tool = neuron_device(2)
    tool["processes"] = [{"pid": 23, "command": "neuron-ls -j", "version": "NA"}]
    fakes.set("neuron", devices=[left, walrus, tool])
    statuses = neuron(fakes).survey(HOST)
    assert [s.idle for s in statuses] == [False, False, True]
    assert "neuronx-cc" in statuses[0].reason and "leftover compiler" in statuses[0].reason
    assert statuses[0].processes[0].detail == "leftover compiler"
    assert "walrus_driver --neff x (pid 22)" in statuses[1].reason
    # One of kernelopt's own compiles is not a leftover.
    assert neuron(fakes, ignore_pids=frozenset({21})).survey(HOST)[0].idle


def test_neuron_own_process_on_local_host_is_not_a_user(fakes: FakeTools) -> None:
    spec = neuron_device(0)
    spec["processes"] = [{"pid": os.getpid(), "command": "python3 -m pytest"}]
    fakes.set("neuron", devices=[spec])
    assert neuron(fakes).survey(HOST)[0].idle


def test_neuron_binds_the_first_logical_core_in_the_hosts_numbering(fakes: FakeTools) -> None:
    # LNC=2: device 2's logical ids are 8..11 (four per chip), not physical 16..23.
    fakes.set("neuron", devices=[neuron_device(2, lnc=2)])
    assert neuron(fakes).survey(HOST)[0].binding == {
        "NEURON_RT_VISIBLE_CORES": "8",
        "NEURON_LOGICAL_NC_CONFIG": "2",
    }


def test_neuron_utilization_from_one_monitor_document_then_monitor_stopped(
    fakes: FakeTools,
) -> None:
    fakes.set("neuron", devices=[neuron_device(0), neuron_device(1)], utilization={"3": 80, "9": 2})
    statuses = neuron(fakes).survey(HOST)
    assert [s.utilization for s in statuses] == [80.0, 2.0]
    assert [s.idle for s in statuses] == [False, True]
    assert "utilization 80%" in statuses[0].reason
    assert len(fakes.monitor_pids) == 1
    deadline = time.monotonic() + 2
    while _alive(fakes.monitor_pids[0]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(fakes.monitor_pids[0])


def test_neuron_monitor_of_own_runtime_is_ignored(fakes: FakeTools) -> None:
    fakes.set("neuron", devices=[neuron_device(0)], utilization={"0": 90}, runtime_pid=777)
    status = neuron(fakes, ignore_pids=frozenset({777})).survey(HOST)[0]
    assert status.idle and status.utilization == 0.0


def test_neuron_without_monitor_has_no_utilization(fakes: FakeTools) -> None:
    fakes.set("neuron", devices=[neuron_device(0)], monitor="absent")
    status = neuron(fakes).survey(HOST)[0]
    assert status.idle and status.utilization is None


def test_neuron_malformed_output_names_the_command(fakes: FakeTools) -> None:
    fakes.set("neuron", devices=[neuron_device(0)], output="malformed")
    with pytest.raises(GateError, match=r"neuron-ls --output-format json.*did not print JSON"):
        neuron(fakes).survey(HOST)


def test_neuron_missing_key_names_key_and_entry(fakes: FakeTools) -> None:
    fakes.set("neuron", devices=[neuron_device(0)], output="missing-key")
    with pytest.raises(GateError, match=r"device entry 0: missing key 'neuroncore_ids'"):
        neuron(fakes).survey(HOST)


def test_missing_tool_names_tool_and_host(fakes: FakeTools) -> None:
    fakes.remove("neuron-ls")
    gate = NeuronGate(search_path=[str(fakes.bin_dir)], process_table=OWN_PROCESSES)
    with pytest.raises(GateError, match=r"neuron-ls not found on host box"):
        gate.survey(HOST)


def test_parse_neuron_ls_rejects_object_without_device_list() -> None:
    with pytest.raises(GateError, match=r"no device list.*keys: instance_type"):
        parse_neuron_ls('{"instance_type": "trn2"}', command="neuron-ls", host="h")


# -- nvidia ---------------------------------------------------------------------


def nvidia(fakes: FakeTools) -> NvidiaGate:
    return NvidiaGate(search_path=[str(fakes.bin_dir)])


def gpu(index: int, util: object = 0, mem: object = 3) -> dict[str, object]:
    return {"index": index, "uuid": f"GPU-{index:04d}", "util": util, "mem": mem, "total": 81559}


def test_nvidia_processes_and_utilization_decide_busy(fakes: FakeTools) -> None:
    fakes.set(
        "nvidia",
        gpus=[gpu(0), gpu(1, util=97), gpu(2)],
        apps=[{"uuid": "GPU-0002", "pid": 4321, "name": "python", "mem": 2048}],
    )
    statuses = nvidia(fakes).survey(HOST)
    assert [s.idle for s in statuses] == [True, False, False]
    assert statuses[0].binding == {"CUDA_VISIBLE_DEVICES": "GPU-0000"}
    assert "utilization 97%" in statuses[1].reason
    assert statuses[2].processes[0].pid == 4321 and "python" in statuses[2].reason


def test_nvidia_not_available_values_are_none(fakes: FakeTools) -> None:
    # Memory does not decide busy, so an unknown memory.used leaves the GPU idle;
    # an unknown utilization makes it busy (tests/devices/test_gate_fail_closed_gpu.py).
    fakes.set("nvidia", gpus=[gpu(0, util=0, mem="[Not Supported]")], apps=[])
    status = nvidia(fakes).survey(HOST)[0]
    assert status.idle and status.utilization == 0.0 and status.memory_used is None
    fakes.set("nvidia", gpus=[gpu(0, util="[N/A]", mem="[N/A]")], apps=[])
    status = nvidia(fakes).survey(HOST)[0]
    assert not status.idle and status.utilization is None and status.memory_used is None


def test_nvidia_malformed_line_is_reported_with_line_number(fakes: FakeTools) -> None:
    fakes.set("nvidia", gpus=[gpu(0)], apps=[], output="malformed")
    with pytest.raises(GateError, match=r"--query-gpu.*line 1: expected 5 comma-separated"):
        nvidia(fakes).survey(HOST)


# -- rocm -----------------------------------------------------------------------


def rocm(fakes: FakeTools) -> RocmGate:
    return RocmGate(search_path=[str(fakes.bin_dir)])


def test_rocm_use_and_vram_decide_busy(fakes: FakeTools) -> None:
    fakes.set("rocm", cards=[{"use": 0, "vram": 1}, {"use": 60, "vram": 2}, {"use": 1, "vram": 40}])
    statuses = rocm(fakes).survey(HOST)
    assert [s.idle for s in statuses] == [True, False, False]
    assert statuses[0].binding == {"HIP_VISIBLE_DEVICES": "0"}
    assert "GPU use 60%" in statuses[1].reason and "VRAM 40%" in statuses[2].reason


def test_rocm_older_memory_key_is_accepted(fakes: FakeTools) -> None:
    fakes.set("rocm", cards=[{"use": 0, "vram": 50}], old_memory_key=True)
    status = rocm(fakes).survey(HOST)[0]
    assert status.memory_used == 50.0 and not status.idle


def test_rocm_single_card_with_a_process_is_busy(fakes: FakeTools) -> None:
    fakes.set("rocm", cards=[{"use": 0, "vram": 0}], pids=[{"pid": 555, "name": "python3"}])
    status = rocm(fakes).survey(HOST)[0]
    assert not status.idle and "python3 (pid 555)" in status.reason


def test_rocm_missing_key_and_malformed_output(fakes: FakeTools) -> None:
    fakes.set("rocm", cards=[{"use": 0, "vram": 0}], output="missing-key")
    with pytest.raises(GateError, match=r"card0: missing key 'GPU use \(%\)'"):
        rocm(fakes).survey(HOST)
    fakes.set("rocm", output="malformed")
    with pytest.raises(GateError, match=r"rocm-smi --showuse.*did not print JSON"):
        rocm(fakes).survey(HOST)
