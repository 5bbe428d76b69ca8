"""Core numbering: a lease on device k binds a core of chip k at the kernel's LNC.

neuron-ls's `neuroncore_ids` are logical ids at the host's LNC (neuron-ls.rst:
device 15 -> 60..63 at LNC=2); a binding carries its numbering and is renumbered
for the LNC the kernel runs with, keeping the chip.
"""

from __future__ import annotations

import pytest
from fake_tools import OWN_PROCESSES, FakeTools, neuron_device

from kernelopt.devices.neuron import (
    BindingError,
    CoreBinding,
    NeuronGate,
    for_lnc,
    read_binding,
)
from kernelopt.hosts import LocalHost


@pytest.mark.parametrize(
    ("host_lnc", "device", "kernel_lnc", "core", "physical"),
    [
        (2, 15, 2, "60", [120, 121]),  # the documented example's last device
        (2, 15, 1, "120", [120]),
        (2, 1, 1, "8", [8]),  # not core 4 (on chip 0) as a physical reading gives
        (2, 1, 2, "4", [8, 9]),
        (1, 1, 1, "8", [8]),
        (1, 1, 2, "4", [8, 9]),
        (1, 3, 2, "12", [24, 25]),
    ],
)
def test_a_lease_on_device_k_binds_chip_k_at_every_lnc(
    fakes: FakeTools,
    host_lnc: int,
    device: int,
    kernel_lnc: int,
    core: str,
    physical: list[int],
) -> None:
    fakes.set("neuron", devices=[neuron_device(n, lnc=host_lnc) for n in range(16)])
    gate = NeuronGate(search_path=[str(fakes.bin_dir)], process_table=OWN_PROCESSES)
    status = gate.survey(LocalHost())[device]
    assert status.device == str(device)
    env = for_lnc(status.binding, kernel_lnc)
    assert env["NEURON_RT_VISIBLE_CORES"] == core
    assert env["NEURON_LOGICAL_NC_CONFIG"] == str(kernel_lnc)
    bound = read_binding(env)
    assert bound.chip == device
    assert list(bound.physical) == physical


def test_renumbering_keeps_other_variables() -> None:
    env = {"NEURON_RT_VISIBLE_CORES": "4", "NEURON_LOGICAL_NC_CONFIG": "2", "X": "1"}
    assert for_lnc(env, 1) == {
        "NEURON_RT_VISIBLE_CORES": "8",
        "NEURON_LOGICAL_NC_CONFIG": "1",
        "X": "1",
    }


def test_a_binding_without_its_lnc_is_read_at_the_kernels() -> None:
    assert for_lnc({"NEURON_RT_VISIBLE_CORES": "4-5"}, 2)["NEURON_RT_VISIBLE_CORES"] == "4"
    with pytest.raises(BindingError, match="does not say its LNC"):
        read_binding({"NEURON_RT_VISIBLE_CORES": "4"})


def test_a_core_no_logical_core_starts_at_is_refused() -> None:
    # Physical core 9 is the second half of LNC-2 core 4: no LNC-2 core starts there.
    with pytest.raises(BindingError, match="physical core 9"):
        CoreBinding(9, 1).renumbered(2)
    with pytest.raises(BindingError, match="names no NeuronCore"):
        read_binding({"NEURON_RT_VISIBLE_CORES": "", "NEURON_LOGICAL_NC_CONFIG": "2"})
