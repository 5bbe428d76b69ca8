"""The whole device.kind neuron path on localhost with the fake toolchain:
gate -> ship -> compile -> run -> profile -> parse -> Measurement."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelopt.neuron.target import NeuronTarget
from kernelopt.testing.fake_trn2 import FakeTrn2

MACS = 256 * 128 * 512


def test_a_candidate_is_compiled_run_and_profiled_into_one_measurement(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    target = make_target(opt=3, compiler_args=("--enable-linear-scan-allocation=false",))
    m = target.measure(make_tree())

    assert m.status == "ok", m.error
    assert m.device == "neuron:0@0" and m.host == "localhost" and not m.deterministic
    # MFU from the workload's MACs and the minimum time at 78.64 TFLOPS per physical core.
    seconds = m.metrics["min_ms"] / 1e3
    assert m.metrics["mfu"] == pytest.approx(100 * 2 * MACS / (seconds * 78.64e12))
    assert m.metrics["mfu_estimated_percent"] == m.metrics["mfu"]
    assert m.metrics["median_ms"] >= m.metrics["min_ms"]
    # The profiler's fractions arrive as percent; its -1 fields are missing.
    profile = m.profile
    assert 1.0 < profile["dma_active_time_percent"] <= 100.0
    assert 1.0 < profile["mfu_estimated_percent"] <= 100.0
    assert "spill_save_bytes" not in profile and "hfu_estimated_percent" not in profile
    assert m.metrics["roofline_efficiency"] == pytest.approx(
        100 * profile["mfu_estimated_percent"] / profile["mfu_max_achievable_estimated_percent"]
    )
    assert m.extra["compiler_version"] == "2.21.0.0+fake"
    assert m.extra["runtime_version"] == "2.28.0.0+fake"
    assert m.extra["instance_type"] == "trn2.48xlarge"
    assert m.extra["iterations"] == 100 and m.extra["warmup"] == 10

    # Artifacts are kept in the run's results folder, outside the tree.
    folder = target.results_dir / m.extra["key"]
    assert set(m.artifacts) == {"neff", "ntff", "summary", "compile_log"}
    assert all(Path(p).parent == folder and Path(p).is_file() for p in m.artifacts.values())
    neff = json.loads(Path(m.artifacts["neff"]).read_text())
    assert "-O3" in neff["options"] and "--enable-linear-scan-allocation=false" in neff["options"]
    assert neff["lnc"] == 1
    # The host's copy of the tree is gone.
    assert not Path(neff["kernel"]).exists()

    compiles = fake.calls("neuronx-cc")
    assert compiles and "--target" in compiles[-1]["args"]
    assert compiles[-1]["env"] == {"NEURON_PLATFORM_TARGET_OVERRIDE": "trn2"}
    (capture,) = [c for c in fake.calls("neuron-profile") if c["args"][0] == "capture"]
    assert capture["env"] == {"NEURON_RT_VISIBLE_CORES": "0", "NEURON_LOGICAL_NC_CONFIG": "1"}


def test_a_capacity_error_is_a_failed_measurement_with_the_compilers_message(
    make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    m = make_target().measure(make_tree("kernel_psum_oom.py"))
    assert m.status == "failed"
    assert "Out of memory in psum" in m.error
    assert m.extra["stage"] == "compile" and not m.extra["timed_out"]
    assert "neff" not in m.artifacts
    assert "Out of memory in psum" in Path(m.artifacts["compile_log"]).read_text()


def test_a_runtime_error_is_a_failed_measurement(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(run_error="DMA queue 3 timed out")
    m = make_target().measure(make_tree())
    assert m.status == "failed"
    assert "DMA queue 3 timed out" in m.error and m.extra["stage"] == "measure"
    assert "neff" in m.artifacts  # the compile worked and its NEFF is kept


def test_a_compile_timeout_is_a_failed_measurement(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(compile_delay_s=30)
    m = make_target(compile_timeout_s=0.5).measure(make_tree())
    assert m.status == "failed"
    assert m.extra["timed_out"] is True
    assert "did not finish within 0.5s" in m.error
    assert fake.calls("neuron-profile") == []


def test_a_busy_device_is_not_used(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(devices=1, busy={"0": 1})
    m = make_target().measure(make_tree())
    assert m.status == "failed"
    assert "no idle Neuron device" in m.error and "neuron processes attached" in m.error
    assert fake.calls("neuronx-cc") == []


def test_the_second_device_is_used_when_the_first_is_busy(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(devices=2, busy={"0": 1})
    m = make_target().measure(make_tree())
    assert m.status == "ok", m.error
    assert m.device == "neuron:1@8" and m.extra["visible_cores"] == "8"


@pytest.mark.parametrize(
    ("fmt", "last_listing"),
    [("new", ["--output-format", "json"]), ("old", ["--json-output"])],
)
def test_both_neuron_ls_formats_lead_to_a_measurement(
    fmt: str,
    last_listing: list[str],
    fake: FakeTrn2,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    fake.configure(neuron_ls_format=fmt)
    m = make_target().measure(make_tree())
    assert m.status == "ok", m.error
    assert fake.calls("neuron-ls")[-1]["args"] == last_listing


def test_lnc2_binds_two_cores_and_doubles_the_peak(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(lnc=2)
    m = make_target(lnc=2).measure(make_tree())
    assert m.status == "ok", m.error
    assert m.extra["visible_cores"] == "0,1"
    assert m.extra["peak_flops"] == 2 * 78.64e12
    neff = json.loads(Path(m.artifacts["neff"]).read_text())
    assert neff["lnc"] == 2


def test_a_broken_workload_fails_before_any_host_work(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    tree = make_tree()
    (tree / "ir" / "small" / "workload.py").write_text("INPUT_SPECS = {}\n")
    m = make_target().measure(tree)
    assert m.status == "failed" and "workload.py" in m.error
    assert fake.calls() == []


def test_compiles_overlap_measurements_and_the_device_measures_in_order(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(compile_delay_s=1.0)
    trees = [make_tree() for _ in range(3)]
    results = make_target(compile_workers=2).measure_batch(trees)

    assert [m.status for m in results] == ["ok", "ok", "ok"], [m.error for m in results]
    t = [m.extra["timeline"] for m in results]
    # Two workers: the first two compiles run at the same time.
    assert t[1]["compile_started"] < t[0]["compile_finished"]
    assert t[0]["compile_started"] < t[1]["compile_finished"]
    # The device measures while the third candidate is still compiling.
    assert t[0]["measure_started"] < t[2]["compile_finished"]
    for i in range(3):
        assert t[i]["measure_started"] >= t[i]["compile_finished"]
    # One device: measurements never overlap, and they run in batch order.
    for i in range(2):
        assert t[i + 1]["measure_started"] >= t[i]["measure_finished"]
    assert len({m.extra["key"] for m in results}) == 3


def test_the_reference_row_says_why_there_is_no_compiler_baseline(
    make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    m = make_target().reference(make_tree())
    assert m.status == "failed"
    assert "nkipy is not importable" in m.error
    assert m.extra["what"].startswith("f_numpy compiled by neuronx-cc")


def test_the_reference_row_times_f_numpy_through_nkipy_when_the_host_has_it(
    fake: FakeTrn2,
    tmp_path: Path,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    doubles = Path(__file__).resolve().parent / "sdk_doubles"
    activate = tmp_path / "activate-with-nkipy"
    activate.write_text(f'. "{fake.activate_path}"\nexport PYTHONPATH="{doubles}:$PYTHONPATH"\n')
    m = make_target(activate=activate).reference(make_tree())

    assert m.status == "ok", m.error
    assert m.metrics["min_ms"] == pytest.approx(0.25) and m.metrics["mean_ms"] == pytest.approx(0.3)
    assert m.metrics["mfu"] == pytest.approx(100 * 2 * MACS / (0.25e-3 * 78.64e12))
    assert m.extra["timing"] == "device" and m.extra["what"].startswith("f_numpy")
    assert "output shape (128, 512)" in Path(m.artifacts["neff"]).read_text()
