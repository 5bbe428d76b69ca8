"""roofline_percent: the slowest of TensorE, VectorE/ScalarE and HBM work at a chip's
peak rates, over the time; in every sim profile and as a metric a program tunes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from ir_support import small_workload

from kernelopt.ir import render_ir, roofline_work
from kernelopt.ir.knobs_io import ir_for_workload
from kernelopt.program_checks import NKI_METRICS
from kernelopt.sim import check_kernel
from kernelopt.sim.chips import CHIPS
from kernelopt.sim.roofline import PeakRates, RooflineWork, roofline
from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params
from kernelopt.targets.nki import NkiSimTarget


def test_rates_are_read_from_the_chip_parameters_by_name() -> None:
    slow = dataclasses.replace(
        DEFAULT_PARAMS, vector_clock_hz=0.5e9, hbm_bytes_per_ns=100.0, peak_bf16_flops=1e12
    )
    rates = PeakRates.of(slow)
    assert rates.vector_elements_per_s == 128 * 0.5e9
    assert rates.hbm_bytes_per_s == 100e9
    assert rates.tensor_macs_per_s == 0.5e12
    assert PeakRates.of(Trn2Params()).scalar_elements_per_s == 128 * 1.2e9


def test_the_slowest_resource_is_the_roofline() -> None:
    rates = PeakRates(1e12, 1e11, 1e11, 1e11)
    hbm = roofline(RooflineWork(tensor_macs=10**9, hbm_bytes=10**9), rates)
    assert hbm.bound == "hbm" and hbm.time_s == pytest.approx(1e-2)
    assert hbm.percent(2e-2) == pytest.approx(50.0)
    tensor = roofline(RooflineWork(tensor_macs=10**12, hbm_bytes=10**9), rates)
    assert tensor.bound == "tensor" and tensor.time_s == pytest.approx(1.0)
    fp32 = roofline(RooflineWork(tensor_macs=10**12, fp32_matmul=True), rates)
    assert fp32.time_s == pytest.approx(4.0)


def test_vector_and_scalar_share_the_work_they_both_can_run() -> None:
    rates = PeakRates(1e12, 1e9, 1e9, 1e12)
    shared = roofline(RooflineWork(either_elements=10**9), rates)
    assert shared.vector_scalar_s == pytest.approx(0.5)
    pinned = roofline(RooflineWork(vector_elements=10**9, either_elements=10**9), rates)
    assert pinned.vector_scalar_s == pytest.approx(1.0)  # the either work goes to ScalarE
    assert pinned.bound == "vector_scalar"


def test_vectore_performance_mode_work_is_split_where_it_runs_fastest() -> None:
    # 4e9 elements VectorE streams 4x in its performance mode, or ScalarE at 1x: both
    # finish together when VectorE takes 3.2e9 (0.8 s) and ScalarE 0.8e9 (0.8 s).
    rates = PeakRates(1e12, 1e9, 1e9, 1e12, vector_fast_factor=4.0)
    assert roofline(RooflineWork(fast_either_elements=4 * 10**9), rates).vector_scalar_s == (
        pytest.approx(0.8)
    )
    # With 0.5 s of VectorE-only work, both finish at 1.2 s: VectorE streams 2.8e9 of
    # them (0.5 + 0.7 s) and ScalarE 1.2e9.
    mixed = RooflineWork(vector_elements=5 * 10**8, fast_either_elements=4 * 10**9)
    assert roofline(mixed, rates).vector_scalar_s == pytest.approx(1.2)
    assert PeakRates.of(DEFAULT_PARAMS).vector_fast_factor == 4.0
    assert PeakRates.of(CHIPS["trn1"]).vector_fast_factor == 1.0  # new in NeuronCore-v3


def test_the_math_work_of_a_workload_is_counted_from_its_op_graph() -> None:
    w = small_workload("softmax")  # x: 256 x 1024 bf16
    work = roofline_work(w.f_nkigym, w.input_specs)
    elements = 256 * 1024
    assert work.tensor_macs == 0
    assert work.scalar_elements == elements  # exp
    assert work.vector_elements == 2 * elements + 256  # max, sum, reciprocal of the column
    assert work.either_elements == 0
    # The final multiply, bf16 in and out: VectorE's performance mode may stream it.
    assert work.fast_either_elements == elements
    assert work.hbm_bytes == 2 * elements * 2
    gelu = small_workload("matmul_gelu")
    assert roofline_work(gelu.f_nkigym, gelu.input_specs).tensor_macs == 256 * 256 * 1024


def test_a_row_sum_carried_by_its_activation_costs_no_pass_of_its_own() -> None:
    # ActivationReduce: ScalarE sums the exp's row as it writes it, so the least work
    # of the softmax is max (VectorE), exp with its sum (ScalarE), the multiply (either).
    w = small_workload("softmax")  # x: 256 x 1024 bf16
    work = roofline_work(w.f_nkigym, w.input_specs)
    elements = 256 * 1024
    fused = (elements + 256, elements, 0, elements)  # max and the column's reciprocal
    assert fused in work.fused_elementwise
    rates = dataclasses.replace(PeakRates.of(DEFAULT_PARAMS), vector_fast_factor=1.0)
    rv, rs = rates.vector_elements_per_s, rates.scalar_elements_per_s
    by_hand = max(fused[0] / rv, fused[1] / rs, sum(fused) / (rv + rs))
    assert roofline(work, rates).vector_scalar_s == pytest.approx(by_hand)
    op_by_op = roofline(dataclasses.replace(work, fused_elementwise=()), rates)
    assert op_by_op.vector_scalar_s > by_hand


LAYER_NORM = """
import numpy as np
from kernelopt.ir import NKIActivation, NKITensorReduce, NKITensorScalar, NKITensorTensor

def f_nkigym(x):
    mean = NKITensorReduce(op="add", axis=1)(data=x)
    xc = NKITensorScalar(op0="subtract", operand0=NKITensorScalar(
        op0="multiply", operand0=1.0 / 1024)(data=mean))(data=x)
    var = NKITensorReduce(op="add", axis=1)(data=NKITensorTensor(op="multiply")(
        data1=xc, data2=xc))
    rstd = NKIActivation(op="rsqrt", scale=1.0 / 1024, bias=1e-5)(data=var)
    return NKIActivation(op="copy", scale=rstd)(data=xc)

def f_numpy(x):
    return f_nkigym(x.astype(np.float32))

INPUT_SPECS = {"x": ((1024, 1024), "bfloat16")}
"""


def test_no_variant_of_the_math_beats_its_roofline(tmp_path: Path) -> None:
    # The square of the centred rows and their sum are one ScalarE pass in the
    # ActivationReduce variant: counted op by op, that kernel ran faster than the
    # roofline (23.5 us against 25.6 us) and its figure was clipped to 100 %.
    from kernelopt.ir import REWRITES, build_ir, enumerate_rewrite_combinations
    from kernelopt.ir.sample import with_default_knobs
    from kernelopt.workload import load_workload

    (tmp_path / "workload.py").write_text(LAYER_NORM)
    w = load_workload(tmp_path / "workload.py")
    work = roofline_work(w.f_nkigym, w.input_specs)
    bound = roofline(work, PeakRates.of(DEFAULT_PARAMS)).time_s
    variants = enumerate_rewrite_combinations(
        build_ir(w.f_nkigym, w.input_specs), list(REWRITES.values())
    )
    names = []
    for name, ir in variants:
        kernel = tmp_path / f"{name}.py"
        kernel.write_text(render_ir(with_default_knobs(ir)))
        report = check_kernel(kernel, w)
        assert report.correct, name
        assert report.profile["total_time"] >= bound, name
        names.append(name)
    assert "ActivationReduce" in names


def test_every_sim_profile_and_the_target_carry_roofline_percent(tmp_path: Path) -> None:
    w = small_workload("softmax")
    kernel = tmp_path / "kernel.py"
    kernel.write_text(render_ir(ir_for_workload(w)))
    report = check_kernel(kernel, w)
    assert report.correct
    assert 0.0 < report.profile["roofline_percent"] <= 100.0
    assert report.profile["roofline_bound"] in ("tensor", "vector_scalar", "hbm")
    work = roofline_work(w.f_nkigym, w.input_specs)
    target = NkiSimTarget(workload="w.py", kernel="k.py", isolate=False)
    m = target.measurement_of(report, None, 0.1, work=work)
    expected = roofline(work, PeakRates.of(DEFAULT_PARAMS)).percent(report.profile["total_time"])
    assert m.metrics["roofline_percent"] == pytest.approx(expected)
    assert "roofline_percent" in NKI_METRICS


def test_the_metric_is_proportional_to_speed_for_one_workload(tmp_path: Path) -> None:
    w = small_workload("layernorm")
    work = roofline_work(w.f_nkigym, w.input_specs)
    target = NkiSimTarget(workload="w.py", kernel="k.py", isolate=False)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(render_ir(ir_for_workload(w)))
    m = target.measurement_of(check_kernel(kernel, w), None, 0.1, work=work).metrics
    assert m["roofline_percent"] * m["total_time"] == pytest.approx(100.0 * m["roofline_time"])
    assert m["roofline_time"] == pytest.approx(roofline(work, PeakRates.of(DEFAULT_PARAMS)).time_s)


def test_a_trn1_target_takes_the_roofline_at_trn1_peak_rates(tmp_path: Path) -> None:
    # The same report measured for trn1 is held against trn1's peak rates, not trn2's.
    from kernelopt.sim.chips import chip_params

    w = small_workload("softmax")
    work = roofline_work(w.f_nkigym, w.input_specs)
    kernel = tmp_path / "kernel.py"
    kernel.write_text(render_ir(ir_for_workload(w)))
    report = check_kernel(kernel, w, params=chip_params("trn1"))
    target = NkiSimTarget(workload="w.py", kernel="k.py", isolate=False, chip="trn1")
    m = target.measurement_of(report, None, 0.1, work=work).metrics
    trn1 = roofline(work, PeakRates.of(chip_params("trn1"))).time_s
    assert m["roofline_time"] == pytest.approx(trn1)
    assert trn1 != pytest.approx(roofline(work, PeakRates.of(DEFAULT_PARAMS)).time_s)


def test_sim_check_reports_the_workloads_roofline_as_tuning_measures_it() -> None:
    # `kernelopt sim check --workload` with an op graph prints the math's roofline, the
    # figure a tuning run records, not one read off the kernel's own trace: the hand
    # kernel below does work the math does not (colsum(w), a K=3 correction), so the
    # two differ.
    import json

    from click.testing import CliRunner

    from kernelopt.cli import main
    from kernelopt.workload import load_workload

    root = Path(__file__).resolve().parents[2]
    kernel = root / "benchmarks" / "hand_kernels" / "layernorm_matmul_mean_after.py"
    workload = root / "tests" / "ir" / "llm_workloads" / "layernorm_matmul.py"
    result = CliRunner().invoke(
        main, ["sim", "check", str(kernel), "--workload", str(workload), "--json"]
    )
    assert result.exit_code == 0, result.output
    profile = json.loads(result.output)
    w = load_workload(workload)
    work = roofline_work(w.f_nkigym, w.input_specs)
    expected = roofline(work, PeakRates.of(DEFAULT_PARAMS)).percent(profile["total_time"])
    assert profile["roofline_percent"] == pytest.approx(expected)
