"""One contract for every Gate kind, run against each with its fake tool idle."""

from __future__ import annotations

import json

import pytest
from fake_tools import OWN_PROCESSES, FakeTools, neuron_device

from kernelopt.devices import Gate, GateError, make_gate
from kernelopt.hosts import LocalHost

KINDS = ["neuron", "nvidia", "rocm", "none"]
# The variables a binding sets: a Neuron core id is meaningless without the LNC
# numbering it is in, so the Neuron binding names both.
BINDING_VARS = {
    "neuron": {"NEURON_RT_VISIBLE_CORES", "NEURON_LOGICAL_NC_CONFIG"},
    "nvidia": {"CUDA_VISIBLE_DEVICES"},
    "rocm": {"HIP_VISIBLE_DEVICES"},
}


def idle_gate(kind: str, fakes: FakeTools) -> Gate:
    fakes.set("neuron", devices=[neuron_device(0), neuron_device(1)])
    fakes.set(
        "nvidia",
        gpus=[{"index": i, "uuid": f"GPU-{i}", "util": 0, "mem": 0, "total": 1} for i in (0, 1)],
        apps=[],
    )
    fakes.set("rocm", cards=[{"use": 0, "vram": 0}, {"use": 0, "vram": 0}])
    if kind == "none":
        return make_gate("none")
    if kind == "neuron":
        return make_gate(kind, search_path=[str(fakes.bin_dir)], process_table=OWN_PROCESSES)
    return make_gate(kind, search_path=[str(fakes.bin_dir)])


@pytest.mark.parametrize("kind", KINDS)
def test_idle_devices_have_binding_and_idle_reason(kind: str, fakes: FakeTools) -> None:
    gate = idle_gate(kind, fakes)
    statuses = gate.survey(LocalHost("h1"))
    assert statuses and gate.kind == kind
    for status in statuses:
        assert status.idle and status.reason == "idle"
        assert status.host == "h1" and status.kind == kind
        if kind in BINDING_VARS:
            assert set(status.binding) == BINDING_VARS[kind]
        json.dumps(status.as_dict())  # what --json prints must serialise
    assert len({s.device for s in statuses}) == len(statuses)


@pytest.mark.parametrize("kind", KINDS)
def test_survey_changes_nothing(kind: str, fakes: FakeTools) -> None:
    gate = idle_gate(kind, fakes)
    before = fakes.state_path.read_text()
    assert gate.survey(LocalHost()) == gate.survey(LocalHost())
    assert fakes.state_path.read_text() == before


@pytest.mark.parametrize("kind", ["neuron", "nvidia", "rocm"])
def test_missing_tool_is_a_gate_error(kind: str, fakes: FakeTools) -> None:
    gate = make_gate(kind, search_path=[str(fakes.bin_dir / "empty")])
    with pytest.raises(GateError, match="not found on host"):
        gate.survey(LocalHost())


def test_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="neuron, nvidia, rocm, none"):
        make_gate("tpu")


def test_auto_gate_uses_the_tool_each_host_has(fakes: FakeTools) -> None:
    idle_gate("neuron", fakes)
    auto = make_gate("auto", search_path=[str(fakes.bin_dir)])
    assert {s.kind for s in auto.survey(LocalHost())} == {"neuron"}
    fakes.remove("neuron-ls")
    # the kind found first is kept for that host, so its tool is still required
    with pytest.raises(GateError, match="neuron-ls not found"):
        auto.survey(LocalHost())
    fresh = make_gate("auto", search_path=[str(fakes.bin_dir)])
    assert {s.kind for s in fresh.survey(LocalHost())} == {"nvidia"}
