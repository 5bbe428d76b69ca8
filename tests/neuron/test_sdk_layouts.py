"""kernelopt's neuron measuring path end to end on each SDK layout of the fake
toolchain: candidates and the compiler baseline are measured, none failed, each
with the path, generation and call shapes the probe found in its record."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelopt.neuron.target import NeuronTarget
from kernelopt.testing.fake_trn2 import FakeTrn2

MACS = 256 * 128 * 512
LAYOUTS = {
    # sdk: (path, generation, compile API, profiler, compile call shape)
    "2.32": ("nrtpy", ">=2.32", "nki.compiler", "neuron-explorer", "specs"),
    "2.30": ("capture", "2.30-2.31", "nki.compiler", "neuron-explorer", "tuple"),
    "2.27": ("capture", "2.27-2.29", "nki_standalone", "neuron-explorer", None),
}


@pytest.mark.slow
@pytest.mark.parametrize("sdk", sorted(LAYOUTS))
def test_candidates_and_the_compiler_baseline_are_measured_on_each_layout(
    sdk: str,
    fake: FakeTrn2,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    fake.install(sdk=sdk)
    path, generation, api, profiler, shape = LAYOUTS[sdk]
    target = make_target(iterations=20)
    first, second = target.measure_batch([make_tree(), make_tree()])
    baseline = target.reference(make_tree())

    for m in (first, second, baseline):
        assert m.status == "ok", m.error
        plan = m.extra["sdk"]
        assert (plan["path"], plan["generation"], plan["profiler"]) == (path, generation, profiler)
        assert plan["path_chosen"] == "probed" and plan["baseline"] == "nkipy"
        assert m.extra["timing"] == "device" and m.metrics["time"] > 0
        assert m.extra["sdk_path"] == path
        seconds = m.metrics["min_ms"] / 1e3
        assert m.metrics["mfu_from_device_time"] == pytest.approx(
            100 * 2 * MACS / (seconds * 78.64e12)
        )
    assert first.extra["compile_api"] == api
    call = first.extra["compile_options"]["call_shape"]
    if shape:
        assert call["result"] == shape
        aliases = "input_output_aliases" in call["compile_bir_to_neff"]
        assert aliases == (shape == "tuple")
    else:
        assert "kernel_outputs" in call["compile_nki_ir_kernel_to_neff"]
    if path == "nrtpy":
        assert first.extra["timing_source"] == "nrtpy.NrtpyModel.benchmark(mode=device)"
        assert first.extra["iterations"] == 20 and first.extra["device_check"]["passed"]
        assert first.extra["run_call_shape"]["benchmark"]
        assert "compiler's output specs" in first.extra["output_dtypes"]["source"]
    else:
        assert (
            first.extra["timing_source"] == f"{profiler} capture total_time (fed the seeded inputs)"
        )
        assert first.extra["iterations"] == 5 and fake.calls("nrtpy") == []
        # No nrtpy: the outputs a capture saved (--save-output) are checked against f_numpy.
        assert first.extra["device_check"]["status"] == "checked"
        assert first.extra["device_check"]["passed"]
    # The compiler baseline: nkipy's compile_to_neff in a folder of its own, its own flags,
    # its outputs' dtypes from the traced program.
    (nkipy,) = fake.calls("nkipy")
    assert nkipy["args"] == ["compile_to_neff", "--lnc 1 --internal-tensorizer-opt-level=2"]
    assert baseline.extra["compile_options"]["call_shape"]["compile_to_neff"][0] == "trace_kernel"
    tensors = json.loads(Path(baseline.artifacts["tensors"]).read_text())
    assert tensors["source"] == "nkipy traced IR outputs"
    assert [o["dtype"] for o in tensors["outputs"]] == ["bfloat16"]
    assert baseline.extra["what"] == "f_numpy compiled by neuronx-cc (nkipy)"


@pytest.mark.slow
def test_a_forced_capture_path_is_used_where_nrtpy_exists(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    m = make_target(sdk_path="capture").measure(make_tree())
    assert m.status == "ok", m.error
    assert m.extra["sdk"]["path"] == "capture"
    assert m.extra["sdk"]["path_chosen"] == "forced (device.neuron.sdk_path)"
    assert fake.calls("nrtpy") == []


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["last", "first"])
def test_the_baseline_for_another_lnc_replaces_nkipys_lnc_whichever_duplicate_wins(
    fake: FakeTrn2,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
    rule: str,
) -> None:
    # Which of two --lnc neuronx-cc honours is not on record: one is never passed.
    fake.configure(lnc=2, cores_per_device=4, repeated_option=rule)
    m = make_target(lnc=2).reference(make_tree())
    (nkipy,) = fake.calls("nkipy")
    assert nkipy["args"][1] == "--lnc 2 --internal-tensorizer-opt-level=2"
    (compiled,) = [c for c in fake.calls("neuronx-cc") if c["args"][0] == "compile"]
    assert [a for a in compiled["args"] if a.startswith("--lnc")] == ["--lnc"]
    assert compiled["args"][compiled["args"].index("--lnc") + 1] == "2"
    assert m.status == "ok", m.error
    assert json.loads(Path(m.artifacts["neff"]).read_text())["lnc"] == 2
