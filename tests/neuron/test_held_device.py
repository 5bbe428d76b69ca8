"""Measuring on a device the caller already leased (an executor running the
target on the device's host): the binding is used as given, no gate runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelopt.neuron.target import NeuronTarget
from kernelopt.testing.fake_trn2 import FakeTrn2


def test_a_callers_binding_is_used_without_the_gate(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    m = make_target().measure(make_tree(), env={"NEURON_RT_VISIBLE_CORES": "5"})
    assert m.status == "ok", m.error
    assert m.extra["visible_cores"] == "5" and m.host == "localhost"
    assert fake.calls("neuron-ls") == []
    (capture,) = [c for c in fake.calls("neuron-explorer") if c["args"][0] == "capture"]
    assert capture["env"]["NEURON_RT_VISIBLE_CORES"] == "5"


def test_the_spec_describes_a_target_that_measures_on_this_machine(
    fake: FakeTrn2,
    tmp_path: Path,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    original = make_target(
        opt=1, pipeline_options=("enable-instruction-scheduling=false",), iterations=5
    )
    spec = json.loads(json.dumps(original.spec()))
    assert spec["kind"] == "nki-neuron" and spec["timeout_s"] > 2 * 600
    spec["results_dir"] = str(tmp_path / "host-results")
    rebuilt = NeuronTarget.from_spec(spec)
    assert rebuilt.settings == original.settings and rebuilt.python == sys.executable
    assert (rebuilt.seeds, rebuilt.atol, rebuilt.rtol) == (original.seeds, 5e-3, 5e-3)

    m = rebuilt.measure(make_tree(), env={"NEURON_RT_VISIBLE_CORES": "2"})
    assert m.status == "ok", m.error
    assert m.extra["iterations"] == 5 and m.extra["opt"] == 1
    assert m.extra["pipeline_options"] == ["enable-instruction-scheduling=false"]
    assert Path(m.artifacts["neff"]).is_relative_to(tmp_path / "host-results")
    # Without the caller's binding there is no device to use: a failure, at once.
    alone = rebuilt.measure(make_tree())
    assert alone.status == "failed" and "no idle Neuron device" in alone.error


@pytest.mark.slow
def test_kernelopt_always_binds_though_the_runtime_does_not_require_it(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    # The real runtime needs no NEURON_RT_VISIBLE_CORES (every core is visible) and
    # loads on core 0 without it: a dropped binding would silently measure on chip 0.
    fake.configure(devices=2, busy={"0": 1})
    m = make_target().measure(make_tree())
    assert m.status == "ok", m.error
    runs = [c for c in fake.calls("nrtpy") if c["args"][0] == "load_from_neff"]
    traces = fake.calls("neuron-explorer:device")
    assert runs and traces
    for call in runs + traces:
        assert call["ran_on"]["bound"] and call["ran_on"]["chip"] == 1
    assert all(c["env"]["NEURON_RT_VISIBLE_CORES"] == "8" for c in runs)

    # The same NEFF loaded without a binding runs, on chip 0: the fake is no stricter.
    env = {**os.environ, **fake.env(runtime=True), "NEURON_LOGICAL_NC_CONFIG": "1"}
    env.pop("NEURON_RT_VISIBLE_CORES", None)
    load = f"import nrtpy; nrtpy.NrtpyModel.load_from_neff({m.artifacts['neff']!r})"
    done = subprocess.run([sys.executable, "-c", load], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    unbound = fake.calls("nrtpy")[-1]["ran_on"]
    assert (unbound["bound"], unbound["chip"], unbound["core"]) == (False, 0, 0)


def test_a_callers_binding_is_renumbered_for_the_kernels_lnc_or_refused() -> None:
    from kernelopt.hosts import LocalHost
    from kernelopt.neuron.held import CallersDevice, bind

    # Device 3 leased at the host's LNC=2 (logical core 12): at lnc 1 the same chip is 24.
    held = CallersDevice(
        LocalHost(), {"NEURON_RT_VISIBLE_CORES": "12", "NEURON_LOGICAL_NC_CONFIG": "2"}
    )
    binding, where = bind(held, 1)
    assert binding == {"NEURON_RT_VISIBLE_CORES": "24", "NEURON_LOGICAL_NC_CONFIG": "1"}
    assert where["chip"] == 3 and where["physical_cores"] == [24]
    assert (where["leased_cores"], where["leased_lnc"]) == ("12", 2)
    # Physical core 9 is the second half of an LNC-2 core: no LNC-2 core starts there.
    odd = CallersDevice(
        LocalHost(), {"NEURON_RT_VISIBLE_CORES": "9", "NEURON_LOGICAL_NC_CONFIG": "1"}
    )
    _, where = bind(odd, 2)
    assert "cannot bind device neuron for LNC 2" in where["error"]
    assert "physical core 9" in where["error"]
