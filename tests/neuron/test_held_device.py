"""Measuring on a device the caller already leased (an executor running the
target on the device's host): the binding is used as given, no gate runs."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

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
