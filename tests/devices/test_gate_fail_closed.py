"""Unknown is busy: a failing or nonsensical neuron-monitor never makes a device idle."""

from __future__ import annotations

import os
import re

import pytest
from click.testing import CliRunner
from fake_tools import OWN_PROCESSES, FakeTools, neuron_device

from kernelopt.devices import NoIdleDevice, WaitNotice, acquire
from kernelopt.devices.cli import gate_command
from kernelopt.devices.neuron import NeuronGate
from kernelopt.hosts import LocalHost

HOST = LocalHost("box")


def neuron(fakes: FakeTools, **options: object) -> NeuronGate:
    options.setdefault("process_table", OWN_PROCESSES)
    return NeuronGate(search_path=[str(fakes.bin_dir)], **options)  # type: ignore[arg-type]


# -- neuron-monitor failing as a whole: every device busy, the reason says why --


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("fail", r"exit code 1.*cannot open device"),
        ("empty", r"printed no document"),
        ("malformed", r"did not print a JSON document"),
    ],
)
def test_failing_monitor_makes_every_device_busy(fakes: FakeTools, mode: str, why: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0), neuron_device(1)], monitor=mode)
    statuses = neuron(fakes, timeout=5.0).survey(HOST)
    assert [s.idle for s in statuses] == [False, False]
    for status in statuses:
        assert status.utilization is None
        assert status.reason.startswith("utilization unknown: neuron-monitor")
        assert re.search(why, status.reason), status.reason


def test_hanging_monitor_makes_every_device_busy_within_the_timeout(fakes: FakeTools) -> None:
    fakes.set("neuron", devices=[neuron_device(0)], monitor="hang")
    status = neuron(fakes, timeout=1.5).survey(HOST)[0]
    assert not status.idle
    assert "printed no document within 1.5s" in status.reason


# -- per core: NaN, out of range or missing makes that core's device busy --------


@pytest.mark.parametrize("value", ["NaN", "nan", "Infinity", -3, 100.5, None, "busy"])
def test_unusable_core_value_makes_only_its_device_busy(fakes: FakeTools, value: object) -> None:
    fakes.set(
        "neuron",
        devices=[neuron_device(0), neuron_device(1)],
        utilization={"0": 1, "9": value},
    )
    idle, busy = neuron(fakes).survey(HOST)
    assert idle.idle and idle.utilization == 1.0
    assert not busy.idle and busy.utilization is None
    assert busy.reason.startswith("utilization unknown: neuron-monitor")
    assert "core 9" in busy.reason


def test_gate_command_shows_why_a_device_is_busy(fakes: FakeTools) -> None:
    fakes.set("neuron", devices=[neuron_device(0)], monitor="fail")
    env = {"PATH": f"{fakes.bin_dir}:{os.environ['PATH']}"}
    result = CliRunner().invoke(gate_command, ["--kind", "neuron"], env=env)
    assert result.exit_code == 1, result.output
    assert "BUSY" in result.output
    assert "utilization unknown" in result.output and "cannot open device" in result.output


def test_wait_notice_names_the_unknown_utilization(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0)], utilization={"0": "NaN"})
    notices: list[WaitNotice] = []
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    found = acquire(
        neuron(fakes),
        [HOST],
        poll_s=10,
        max_wait_s=15,
        lock_dir=lock_dir,
        clock=lambda: now[0],
        sleep=sleep,
        on_wait=notices.append,
    )
    assert isinstance(found, NoIdleDevice)
    assert notices and "utilization unknown" in notices[0].reason
    assert "core 0" in notices[0].reason and "utilization unknown" in found.reason
