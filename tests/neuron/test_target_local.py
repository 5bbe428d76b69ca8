"""The whole device.kind neuron path on localhost with the fake toolchain:
gate -> probe -> CPU check -> ship -> compile -> run, check and time on the
device -> profile -> parse -> Measurement, for both SDK layouts."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelopt.neuron.target import NeuronTarget
from kernelopt.testing.fake_trn2 import FakeTrn2
from kernelopt.workload import load_workload, make_inputs

MACS = 256 * 128 * 512
PIPELINE = ("enable-linear-scan-allocation=false", "enable-instruction-scheduling=false")


def test_a_candidate_is_measured_on_the_device_as_the_current_sdk_does(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    m = make_target(pipeline_options=PIPELINE).measure(make_tree())

    assert m.status == "ok", m.error
    assert m.device == "neuron:0@0" and m.host == "localhost" and not m.deterministic
    sdk = m.extra["sdk"]
    assert (sdk["compile_api"], sdk["runtime"], sdk["profiler"], sdk["environments"]) == (
        "nki.compiler",
        "nrtpy",
        "neuron-explorer",
        "split",
    )
    # Device time from the runtime's device-side benchmark, min and median of 100.
    assert m.extra["timing"] == "device"
    assert m.extra["timing_source"] == "nrtpy.NrtpyModel.benchmark(mode=device)"
    assert (m.extra["iterations"], m.extra["warmup"]) == (100, 10)
    assert m.metrics["min_ms"] <= m.metrics["median_ms"] and m.metrics["time"] > 0
    # MFU, the figure keep/revert decides on: 2·MACs / (min device time · 78.64e12 · LNC)
    # from the timed executions; the profiler's estimate of one traced run is a diagnostic.
    assert m.extra["peak_flops"] == 78.64e12 and m.extra["mfu_source"] == "device time"
    seconds = m.metrics["min_ms"] / 1e3
    formula = 100 * 2 * MACS / (seconds * 78.64e12 * 1)
    assert m.metrics["mfu"] == m.metrics["mfu_estimated_percent"] == pytest.approx(formula)
    assert m.metrics["profiler_mfu_estimated_percent"] == m.profile["mfu_estimated_percent"]
    assert m.metrics["profiler_mfu_estimated_percent"] != pytest.approx(formula, rel=1e-6)
    # ... and the time is the device's own report: the minimum of its timed runs.
    (reported,) = [c["min_ms"] for c in fake.calls("nrtpy") if c["args"][0] == "benchmark-result"]
    assert m.metrics["mfu"] == pytest.approx(100 * 2 * MACS / (reported / 1e3 * 78.64e12), rel=1e-9)
    # neuron-explorer's percent fields arrive as percent; its -1 fields are missing.
    assert 1.0 < m.profile["dma_active_time_percent"] <= 100.0
    assert "spill_save_bytes" not in m.profile and "hfu_estimated_percent" not in m.profile
    assert m.metrics["roofline_efficiency"] == pytest.approx(
        100 * m.profile["mfu_estimated_percent"] / m.profile["mfu_max_achievable_estimated_percent"]
    )
    # Numbers checked twice: the CPU simulator before compiling, the device's output after.
    assert m.extra["cpu_check"]["status"] == "ok"
    check = m.extra["device_check"]
    assert check["passed"] and check["seed"] == 0 and check["atol"] == check["rtol"] == 1e-2
    # The device is not the screening model: their times differ.
    assert m.extra["sim"]["total_time"] != pytest.approx(m.profile["total_time"], rel=0.02)
    assert m.extra["compiler_version"] == "2.21.0.0+fake"
    # Explorer's summary has no Metadata fields (instance type, versions).
    assert "instance_type" not in m.profile and "runtime_version" not in m.profile
    # The capture was fed the seeded inputs the run was checked on, not zero bytes.
    (capture,) = fake.calls("neuron-explorer:device")
    assert set(capture["inputs"]) == {"lhsT", "rhs"} and "zeros" not in capture["inputs"].values()
    seeded = make_inputs(load_workload(make_tree() / "ir/small/workload.py").input_specs, 0)
    for name, fed in capture["inputs"].items():
        assert fed == "sha256:" + hashlib.sha256(seeded[name].tobytes()).hexdigest()

    folder = Path(m.artifacts["neff"]).parent
    assert set(m.artifacts) == {"neff", "ntff", "summary", "compile_log", "tensors"}
    assert all(Path(p).parent == folder and Path(p).is_file() for p in m.artifacts.values())
    neff = json.loads(Path(m.artifacts["neff"]).read_text())
    assert neff["pipeline_options"] == list(PIPELINE) and neff["api"] == "nki.compiler"
    assert not Path(neff["kernel"]).exists()  # the host's copy of the tree is gone

    (to_neff,) = fake.calls("nki.compiler.driver")[1:]
    assert to_neff["args"] == ["compile_bir_to_neff", *PIPELINE]
    (compiled,) = [c for c in fake.calls("neuronx-cc") if c["args"][0] == "compile"]
    assert compiled["env"] == {"NEURON_PLATFORM_TARGET_OVERRIDE": "trn2"}
    (benchmark,) = [c for c in fake.calls("nrtpy") if c["args"][0] == "benchmark"]
    assert benchmark["args"][2:] == ["device", "10", "100"]
    assert benchmark["env"] == {"NEURON_RT_VISIBLE_CORES": "0", "NEURON_LOGICAL_NC_CONFIG": "1"}
    (capture,) = [c for c in fake.calls("neuron-explorer") if c["args"][0] == "capture"]
    assert "--profile-nth-exec=2" in capture["args"]
    assert fake.calls("neuron-profile") == []


def test_an_sdk_without_nrtpy_compiles_with_nki_standalone_and_times_profiler_captures(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.install(sdk="2.27")  # no nrtpy before 2.32: the profiler's capture times the NEFF
    target = make_target(opt=3, compiler_args=("--internal-max-instruction-limit=1000000",))
    m = target.measure(make_tree())

    assert m.status == "ok", m.error
    sdk = m.extra["sdk"]
    assert (sdk["compile_api"], sdk["profiler"], sdk["environments"], sdk["path"]) == (
        "nki_standalone",
        "neuron-explorer",
        "one",
        "capture",
    )
    assert sdk["generation"] == "2.27-2.29" and sdk["runtime"] is None
    assert m.extra["timing"] == "device" and m.extra["peak_flops"] == 78.64e12
    assert m.extra["timing_source"] == "neuron-explorer capture total_time (fed the seeded inputs)"
    assert m.extra["iterations"] == 5
    # The device-side check reads the outputs a capture saved (--save-output).
    check = m.extra["device_check"]
    assert check["status"] == "checked" and check["passed"] and check["seed"] == 0
    options = m.extra["compile_options"]["additional_compiler_args"]
    assert options == "-O3 --internal-max-instruction-limit=1000000"
    (compiled,) = [c for c in fake.calls("neuronx-cc") if c["args"][0] == "compile"]
    assert "-O3" in compiled["args"]
    captures = [c for c in fake.calls("neuron-explorer") if c["args"][0] == "capture"]
    saving = [c for c in captures if "--save-output" in c["args"]]
    assert len(captures) == 6 and len(saving) == 1 and saving[0] is captures[0]
    # Each capture is fed the seeded inputs as NAME FILE pairs of raw bytes (the fake
    # refuses a file of any other size), not zero bytes.
    assert all(c["args"][-4::2] == ["lhsT", "rhs"] for c in captures)
    seeded = make_inputs(load_workload(make_tree() / "ir/small/workload.py").input_specs, 0)
    want = {n: "sha256:" + hashlib.sha256(v.tobytes()).hexdigest() for n, v in seeded.items()}
    fed = [c["inputs"] for c in fake.calls("neuron-explorer:device")]
    assert len(fed) == 6 and all(f == want for f in fed)
    assert fake.calls("nrtpy") == []
    assert [c["args"] for c in fake.calls("neuron-profile")] == [["--version"]]  # the probe


@pytest.mark.parametrize(
    ("sdk", "settings", "message"),
    [
        ("current", {"compiler_args": ("-O3",)}, "put compiler pipeline options in"),
        ("2.27", {"pipeline_options": PIPELINE}, "need the NKI compiler API"),
    ],
)
def test_options_the_sdks_compile_api_does_not_take_are_refused_not_dropped(
    sdk: str,
    settings: dict[str, tuple[str, ...]],
    message: str,
    fake: FakeTrn2,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    fake.install(sdk=sdk)
    m = make_target(**settings).measure(make_tree())
    assert m.status == "failed" and message in m.error and m.extra["stage"] == "compile"


def test_nrtpy_beside_the_nki_wheel_is_a_clear_failure(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    # The current SDK with one environment for both: the wheels cannot share it.
    runtime = fake.env(runtime=True)["PYTHONPATH"].split(":")[0]
    both = fake.home / "activate-both"
    both.write_text(f'. "{fake.activate_path}"\nexport PYTHONPATH="$PYTHONPATH:{runtime}"\n')
    m = make_target(activate=both, runtime_activate=str(both)).measure(make_tree())
    assert m.status == "failed"
    assert "device.neuron.runtime_activate" in m.error and "cannot be installed" in m.error
    assert fake.calls("nrtpy") == []


def test_a_kernel_the_cpu_check_fails_is_incorrect_before_any_compile(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    m = make_target().measure(make_tree("kernel_wrong_rows.py"))
    assert m.status == "incorrect"
    assert m.extra["check"] == "cpu" and m.extra["seed"] == 0
    worst = m.extra["worst"]
    assert worst["output"] == 0 and len(worst["index"]) == 2 and worst["abs_error"] > 1
    assert "CPU check" in m.error and "worst: output 0[" in m.error
    assert [c for c in fake.calls("neuronx-cc") if c["args"][0] == "compile"] == []
    assert fake.calls("nrtpy") == []


def test_wrong_numbers_from_the_device_are_incorrect_though_the_cpu_check_passed(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(device_fault={"index": [5, 17], "value": 40.0})
    m = make_target().measure(make_tree())
    assert m.status == "incorrect", m.error
    assert m.extra["cpu_check"]["status"] == "ok"
    assert m.extra["check"] == "device" and m.extra["seed"] == 0
    assert m.extra["worst"]["index"] == [5, 17] and m.extra["worst"]["got"] == 40.0
    assert "seed 0" in m.error and "output 0[5, 17] is 40" in m.error
    # No profile of a wrong kernel.
    assert [c for c in fake.calls("neuron-explorer") if c["args"][0] == "capture"] == []


def test_without_the_runtimes_benchmark_the_profilers_total_time_is_the_device_time(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(no_device_benchmark=True)
    m = make_target().measure(make_tree())
    assert m.status == "ok", m.error
    assert m.extra["timing"] == "device"
    assert m.extra["timing_source"] == "neuron-explorer total_time"
    assert m.extra["iterations"] == 1
    assert m.metrics["min_ms"] == pytest.approx(1e3 * m.profile["total_time"])


@pytest.mark.slow
@pytest.mark.parametrize(("host_lnc", "lnc"), [(2, 1), (2, 2), (1, 1), (1, 2)])
def test_a_lease_on_device_1_runs_on_chip_1_whatever_the_lnc(
    host_lnc: int,
    lnc: int,
    fake: FakeTrn2,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    # Device 0 is busy, so the lease is on device 1; neuron-ls numbers its cores at the
    # host's LNC, the kernel runs at its own. Either way it must run on chip 1.
    fake.configure(lnc=host_lnc, devices=2, busy={"0": 1}, unavailable=["mfu_estimated_percent"])
    m = make_target(lnc=lnc).measure(make_tree())
    assert m.status == "ok", m.error
    bound = m.extra["bound"]
    assert bound["chip"] == 1 and bound["lnc"] == lnc
    assert bound["physical_cores"] == list(range(8, 8 + lnc))
    assert (bound["leased_cores"], bound["leased_lnc"]) == (str(8 // host_lnc), host_lnc)
    assert m.extra["visible_cores"] == bound["visible_cores"] == str(8 // lnc)
    ran = [c["ran_on"] for c in fake.calls("nrtpy") if c["args"][0] == "load_from_neff"]
    traced = [c["ran_on"] for c in fake.calls("neuron-explorer:device")]
    assert ran and all(r["chip"] == 1 and r["lnc"] == lnc and r["bound"] for r in ran + traced)
    # Without the profiler's estimate the MFU is the same device-time figure.
    assert m.extra["peak_flops"] == lnc * 78.64e12
    seconds = m.metrics["min_ms"] / 1e3
    assert m.metrics["mfu"] == pytest.approx(100 * 2 * MACS / (seconds * lnc * 78.64e12))
    assert "profiler_mfu_estimated_percent" not in m.metrics
    assert json.loads(Path(m.artifacts["neff"]).read_text())["lnc"] == lnc


def test_the_host_is_probed_once_for_many_measurements(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    target = make_target()
    assert [target.measure(make_tree()).status for _ in range(2)] == ["ok", "ok"]
    # One probe of each environment, not one per measurement: the compiler's version
    # where compiles run, the profiler's where runs are.
    for tool in ("neuronx-cc", "neuron-explorer"):
        probes = [c for c in fake.calls(tool) if c["args"] == ["--version"]]
        assert len(probes) == 1, tool


def test_a_capacity_error_is_a_failed_measurement_with_the_compilers_message(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    m = make_target().measure(make_tree("kernel_psum_oom.py"))
    assert m.status == "failed"
    assert "Out of memory in psum" in m.error and "NCC_EOOM001" in m.error
    assert m.extra["stage"] == "compile" and not m.extra["timed_out"]
    assert m.extra["cpu_check"]["status"] == "skipped"  # the compiler has the last word
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
    m = make_target(compile_timeout_s=1.0).measure(make_tree())
    assert m.status == "failed"
    assert m.extra["timed_out"] is True
    assert "did not finish within 1s" in m.error
    assert fake.calls("nrtpy") == []


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
    for i, tree in enumerate(trees):  # three different candidates: none reuses another's build
        with (tree / "ir" / "small" / "kernel.py").open("a") as kernel:
            kernel.write(f"# candidate {i}\n")
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
    fake: FakeTrn2,
    tmp_path: Path,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    without = tmp_path / "activate-without-nkipy"
    nki_only = fake.env()["PYTHONPATH"].split(":")[0]
    without.write_text(f'. "{fake.activate_path}"\nexport PYTHONPATH="{nki_only}"\n')
    m = make_target(activate=without).reference(make_tree())
    # Not a failure of anything: a row skipped with the reason and the fix.
    assert m.status == "skipped" and m.extra["what"].startswith("f_numpy compiled by neuronx-cc")
    assert "neither nkipy nor its predecessor neuronpy" in m.error and "install nkipy" in m.error
    assert fake.calls("neuronx-cc") == [
        c for c in fake.calls("neuronx-cc") if c["args"][0] != "compile"
    ]


def test_the_baseline_and_a_candidate_are_timed_through_one_path(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    target = make_target()
    tree = make_tree()
    baseline, candidate = target.reference(tree), target.measure(tree)

    assert baseline.status == "ok" == candidate.status, (baseline.error, candidate.error)
    assert baseline.extra["what"].startswith("f_numpy compiled by neuronx-cc")
    for key in ("timing", "timing_source", "peak_flops", "iterations", "warmup", "seed"):
        assert baseline.extra[key] == candidate.extra[key], key
    assert baseline.extra["device_check"]["passed"]
    assert baseline.extra["compile_api"] == "nkipy"
    seconds = baseline.metrics["min_ms"] / 1e3
    assert baseline.metrics["mfu_from_device_time"] == pytest.approx(
        100 * 2 * MACS / (seconds * 78.64e12)
    )
    # Both NEFFs went through the runtime's device benchmark and the profiler.
    benchmarked = [
        Path(c["args"][1]).parent for c in fake.calls("nrtpy") if c["args"][0] == "benchmark"
    ]
    assert len(benchmarked) == 2
    (nkipy,) = fake.calls("nkipy")
    assert "--internal-tensorizer-opt-level=2" in nkipy["args"][1]
    captures = [c for c in fake.calls("neuron-explorer") if c["args"][0] == "capture"]
    assert len(captures) == 2


def test_a_leftover_compiler_process_on_a_device_sends_the_measurement_elsewhere(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    # An orphaned neuronx-cc still attached to device 0 makes the runtime fail there
    # (NRT_FAILURE), whatever runtime version neuron-ls shows for it.
    leftover = {"pid": 31337, "command": "/opt/venv/bin/neuronx-cc compile k", "version": "NA"}
    device0 = {"id": 0, "cores": list(range(8)), "processes": [leftover]}
    fake.configure(devices=[device0, {"id": 1, "cores": list(range(8, 16))}])
    m = make_target().measure(make_tree())
    assert m.status == "ok", m.error
    assert m.device.startswith("neuron:1@")
    (run,) = [c for c in fake.calls("nrtpy") if c["args"][0] == "benchmark"]
    assert run["env"]["NEURON_RT_VISIBLE_CORES"] == m.extra["visible_cores"] != "0"

    fake.configure(devices=[device0])
    busy = make_target().measure(make_tree())
    assert busy.status == "failed" and "leftover compiler" in busy.error


@pytest.mark.parametrize(("tolerance", "status"), [(1e-2, "incorrect"), (0.5, "ok")])
def test_the_device_checks_tolerance_is_the_programs(
    tolerance: float,
    status: str,
    fake: FakeTrn2,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    # One element off by about 0.1: outside 1e-2, inside 0.5 (atol = rtol).
    fake.configure(device_fault={"index": [7, 9], "offset": 0.1})
    m = make_target(tolerance=tolerance).measure(make_tree())
    assert m.status == status, m.error
    assert m.extra["device_check"]["atol"] == m.extra["device_check"]["rtol"] == tolerance
    assert m.extra["device_check"]["max_abs_error"] == pytest.approx(0.1, abs=0.02)


def test_the_record_names_the_sdk_pieces_and_their_versions(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(compiler_version="2.99.1.0+x", nki_version="0.9.0+x", tools_version="3.1.0+x")
    m = make_target().measure(make_tree())
    assert m.status == "ok", m.error
    sdk = m.extra["sdk"]
    assert (sdk["compile_api"], sdk["compile_api_version"]) == ("nki.compiler", "0.9.0+x")
    assert (sdk["profiler"], sdk["profiler_version"]) == ("neuron-explorer", "3.1.0+x")
    assert sdk["compiler_version"] == "2.99.1.0+x" and sdk["runtime"] == "nrtpy"
    assert sdk["runtime_version"] == m.extra["runtime_version"] and sdk["runtime_version"]
