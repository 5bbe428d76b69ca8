"""ActivationReduce: an activation that sums its own row (nisa.activation with reduce_res).

Numerics on the simulator in both NKI APIs, the pattern found and refused, the validity
rule both ways with its fix, and the VectorE work the rewrite removes.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from ir_support import small_ir

from kernelopt.ir import apply_fix, build_ir, render_ir, sample, validity_report
from kernelopt.ir.cost import engine_times
from kernelopt.ir.derive import derive
from kernelopt.ir.fused_reduce import ActivationReduce
from kernelopt.ir.model import KernelIR
from kernelopt.ir.rewrites import REWRITES, apply_variant
from kernelopt.sim import check_kernel
from kernelopt.workload import Workload, load_workload

FOLDER = Path(__file__).resolve().parent / "llm_workloads"


def _small(name: str) -> Workload:
    w = load_workload(FOLDER / f"{name}.py")
    return dataclasses.replace(w, input_specs=w.module.SMALL_SPECS)


def _ir(name: str) -> KernelIR:
    w = _small(name)
    return build_ir(w.f_nkigym, w.input_specs, name=name)


def test_the_sum_of_an_activation_moves_into_it_and_the_max_does_not() -> None:
    fused = ActivationReduce().apply(_ir("softmax_matmul"))
    assert fused.variant == "ActivationReduce"
    kinds = {op.name: op.kind for op in fused.operators}
    # exp's row sum is fused; the row max (a maximum, negated) stays a VectorE reduction.
    assert [n for n, k in kinds.items() if k == "fused_reduce"] == ["fused_reduce_t2"]
    assert [n for n, k in kinds.items() if k == "tensor_reduce"] == ["tensor_reduce_neg_max"]
    exp = next(op for op in fused.operators if op.name == "activation_e")
    assert exp.attr("reduce_res") == "sbuf_t2" and exp.attr("reduce_dim") == "d1"
    assert not derive(fused)[1]


def test_a_graph_without_the_pattern_is_returned_unchanged() -> None:
    gelu = small_ir("matmul_gelu")  # an activation no reduction reads
    assert ActivationReduce().apply(gelu) is gelu
    # layernorm's mean sums x itself (a load, not an activation): that reduction stays.
    fused = ActivationReduce().apply(_ir("layernorm_matmul"))
    kinds = {op.name: op.kind for op in fused.operators}
    assert kinds["tensor_reduce_t0"] == "tensor_reduce"
    assert kinds["fused_reduce_t3"] == "fused_reduce"


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("layernorm_matmul", "ActivationReduce"),
        ("layernorm_matmul", "SbufTranspose+ActivationReduce"),
        ("softmax_matmul", "ActivationReduce"),
        ("softmax_matmul", "ScaleAfterMatmul+SbufTranspose+FusedDrain+ActivationReduce"),
    ],
)
@pytest.mark.parametrize("api", ["nki", "beta1"])
def test_fused_kernels_compute_f_numpy_on_the_simulator(
    name: str, variant: str, api: str, tmp_path: Path
) -> None:
    fused = apply_variant(_ir(name), variant)
    for seed in range(2):
        state = sample(fused, random.Random(seed))
        text = render_ir(state, api=api)
        assert "nisa.activation_reduce(" in text and "reduce_op=nl.add" in text
        assert ("dst=sbuf_" in text) == (api == "nki")  # beta 1 assigns the result
        kernel = tmp_path / f"{name}_{api}_{seed}.py"
        kernel.write_text(text)
        report = check_kernel(kernel, _small(name))
        assert report.correct, f"{report.error_kind}: {report.error}\n{text}"


def test_the_vector_engine_loses_the_reduction_and_scalar_engine_pays_little() -> None:
    base = _ir("layernorm_matmul")
    fused = ActivationReduce().apply(base)
    state = fused.with_knobs(base.loop_order, base.ltiles_per_block, base.buffer_scopes)
    before, after = engine_times(base), engine_times(state)
    assert before is not None and after is not None
    assert after.vector < before.vector - 100.0  # one row reduction per row tile gone
    # The activation runs as before plus the ~64-cycle read of its accumulator; the copies
    # either engine may run are planned again, so the two engines' sum and the busier of
    # the two both drop.
    assert after.vector + after.scalar < before.vector + before.scalar - 100.0
    assert max(after.vector, after.scalar) < max(before.vector, before.scalar)


EXP_SUM = """
import numpy as np
from kernelopt.ir import NKIActivation, NKITensorReduce, NKITensorScalar


def f_nkigym(x, y):
    s = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="exp")(data=x))
    out = NKITensorScalar(op0="multiply", operand0=s)(data=y)
    return out


def f_numpy(x, y):
    return y.astype(np.float32) * np.exp(x.astype(np.float32)).sum(axis=1, keepdims=True)


INPUT_SPECS = {"x": ((256, 1024), "bfloat16"), "y": ((256, 512), "bfloat16")}
"""


def test_an_activation_that_would_sum_part_of_a_row_is_refused_with_a_fix(
    tmp_path: Path,
) -> None:
    # x is read by the exp alone, so nothing holds its rows whole: a state may walk
    # x's columns tile by tile, which the unfused kernel can do and the fused cannot.
    path = tmp_path / "workload.py"
    path.write_text(EXP_SUM)
    w = load_workload(path)
    base = build_ir(w.f_nkigym, w.input_specs, name="exp_sum")
    fused = ActivationReduce().apply(base)
    refused = 0
    for seed in range(12):
        state = sample(base, random.Random(seed))
        assert validity_report(state) == []
        moved = fused.with_knobs(state.loop_order, state.ltiles_per_block, state.buffer_scopes)
        report = validity_report(moved)
        if not report:
            continue
        refused += 1
        (failure,) = report
        assert failure.check == "fused_reduce" and failure.buffer == "sbuf_x"
        assert "activation_t0 sums its row into sbuf_s" in failure.detail
        # The fix holds x's rows whole, so the exp covers a row in one instruction.
        assert failure.fix is not None and failure.fix["buffer_scopes"]["sbuf_x"]["d1"] == "FULL"
        fixed = apply_fix(moved, failure.fix)
        assert validity_report(fixed) == []
        kernel = tmp_path / f"fixed_{seed}.py"
        kernel.write_text(render_ir(fixed))
        report_sim = check_kernel(kernel, w)
        assert report_sim.correct, f"{report_sim.error_kind}: {report_sim.error}"
    assert refused >= 2


def test_the_rewrite_is_registered_after_the_lowering_rewrites() -> None:
    names = list(REWRITES)
    assert names.index("ActivationReduce") > names.index("FusedDrain")
    ir = apply_variant(_ir("softmax_matmul"), "ScaleAfterMatmul+FusedDrain+ActivationReduce")
    assert any(op.kind == "fused_reduce" for op in ir.operators)
    # FusedDrain leaves a fused activation alone: its row must be one SBUF instruction.
    for op in ir.operators:
        if op.attr("reduce_res") is not None:
            assert all(ir.buffer[b].memory == "sbuf" for b in op.srcs)


SQUARE_BY_MULTIPLY = """
import numpy as np
from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorTensor
from kernelopt.ir import NKITensorScalar, NKITranspose


def f_nkigym(x, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKITensorTensor(op="multiply")(data1=x, data2=x))
    rs = NKIActivation(op="rsqrt", scale=1 / 512, bias=1e-5)(data=ss)
    xn = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    return NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)


def f_numpy(x, w):
    x = x.astype(np.float32)
    xn = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5)
    return xn @ w.astype(np.float32)


INPUT_SPECS = {"x": ((256, 512), "bfloat16"), "w": ((512, 256), "bfloat16")}
"""


def test_a_square_written_as_x_times_x_sums_its_row_on_scalar_engine(tmp_path: Path) -> None:
    """x * x on VectorE then a VectorE row sum: two passes over the row. As
    activation(square) with reduce_res it is one ScalarE pass, and VectorE has neither."""
    path = tmp_path / "sq.py"
    path.write_text(SQUARE_BY_MULTIPLY)
    w = load_workload(path)
    base = build_ir(w.f_nkigym, w.input_specs, name="sq")
    fused = ActivationReduce().apply(base)
    assert fused.variant == "ActivationReduce"
    kinds = {op.name: (op.kind, op.attr("op"), op.srcs) for op in fused.operators}
    assert kinds["activation_t0"] == ("activation", "square", ("sbuf_x",))
    assert "tensor_tensor_t0" not in kinds and kinds["fused_reduce_ss"][0] == "fused_reduce"
    state = fused.with_knobs(base.loop_order, base.ltiles_per_block, base.buffer_scopes)
    before, after = engine_times(base), engine_times(state)
    assert before is not None and after is not None
    # Two VectorE passes become one ScalarE pass: less work in all, and (the copies
    # either engine may run planned again) less on the busier engine.
    assert after.vector + after.scalar < before.vector + before.scalar
    assert max(after.vector, after.scalar) < max(before.vector, before.scalar)
    for seed in range(2):
        text = render_ir(sample(fused, random.Random(seed)))
        assert "op=nl.square" in text and "nisa.activation_reduce(" in text
        kernel = tmp_path / f"sq_{seed}.py"
        kernel.write_text(text)
        report = check_kernel(kernel, w)
        assert report.correct, report.error
