"""ScaleAfterMatmul: a per-row scale moved past a transpose + matmul (x * c) @ w = c * (x @ w).

The pattern is found on the traced graph, the graph lowered again; LoadTranspose and
FusedDrain then apply to the rewritten graph. Numerics are checked in the simulator.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernelopt.ir import (
    REWRITES,
    KnobsError,
    enumerate_rewrite_combinations,
    ir_from_knobs,
    knobs_to_json,
    render_ir,
    sample,
    validity_report,
)
from kernelopt.ir.build import build_ir
from kernelopt.ir.graph_rewrites import ScaleAfterMatmul, ScaleIntoActivation
from kernelopt.ir.rewrites import FusedDrain, LoadTranspose
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

HEAD = """
import numpy as np

from kernelopt.ir import (
    NKIActivation, NKIMatmul, NKIReciprocal, NKITensorReduce, NKITensorScalar, NKITensorTensor,
    NKITranspose,
)
"""

SLOW_RMSNORM = (
    HEAD
    + """

def f_nkigym(x, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt")(
        data=NKITensorScalar(op0="multiply", operand0=1.0 / 256, op1="add", operand1=1e-6)(data=ss)
    )
    xn = NKITensorScalar(op0="multiply", operand0=rs, op1="multiply", operand1=2.0)(data=x)
    out = NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)
    return out


def f_numpy(x, w):
    x = x.astype(np.float32)
    rs = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6)
    return (x * rs * 2.0) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((256, 256), "DTYPE"), "w": ((256, 1024), "DTYPE")}
"""
)


def _workload(tmp_path: Path, text: str, dtype: str = "bfloat16"):
    path = tmp_path / "workload.py"
    path.write_text(text.replace("DTYPE", dtype))
    return load_workload(path)


def _ir(workload):
    return build_ir(workload.f_nkigym, workload.input_specs, name="k")


def _sampled_variants_are_correct(tmp_path: Path, workload, base, rewrite: str, seed: int) -> None:
    """One sampled state of every variant that ``rewrite`` is part of checks correct."""
    rng = random.Random(seed)
    for name, variant in enumerate_rewrite_combinations(base, list(REWRITES.values())):
        if rewrite not in name:
            continue
        kernel = tmp_path / f"{name}.py"
        kernel.write_text(render_ir(sample(variant, rng)))
        report = check_kernel(kernel, workload)
        assert report.correct, f"{name}: {report.error}"


def _rows_scaled_by_rs(body: str) -> str:
    """A workload whose ``body`` computes ``xn`` from ``x`` and its row sum ``rs``, and
    whose result is ``transpose(xn) @ w`` (f_numpy is a placeholder: only built)."""
    return (
        HEAD
        + f"""

def f_nkigym(x, w):
    rs = NKITensorReduce(op="add", axis=1)(data=x)
    {body}
    return NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)


def f_numpy(x, w):
    return x


INPUT_SPECS = {{"x": ((256, 256), "bfloat16"), "w": ((256, 512), "bfloat16")}}
"""
    )


def test_the_scale_moves_after_the_matmul_and_the_transpose_reads_x(tmp_path: Path) -> None:
    base = _ir(_workload(tmp_path, SLOW_RMSNORM))
    moved = ScaleAfterMatmul().apply(base)
    assert moved.variant == "ScaleAfterMatmul"
    ops = {op.name: op for op in moved.operators}
    assert ops["transpose_t5"].srcs == ("sbuf_x",)
    scale = ops["tensor_scalar_out"]
    assert scale.srcs == ("sbuf_out_unscaled", "sbuf_rs")
    assert scale.attr("op0") == scale.attr("op1") == "multiply" and scale.attr("operand1") == 2.0
    # The product stays fp32 until the scale; the kernel's output keeps its dtype.
    assert moved.buffer["sbuf_out_unscaled"].dtype == "float32"
    assert moved.output == base.output and moved.output.dtype == "bfloat16"
    assert "sbuf_t4" not in moved.buffer  # the scaled copy of x had no other reader
    assert validity_report(moved) == []


def test_the_rewritten_graph_opens_load_transpose_and_fused_drain(tmp_path: Path) -> None:
    base = _ir(_workload(tmp_path, SLOW_RMSNORM))
    names = [n for n, _ in enumerate_rewrite_combinations(base, list(REWRITES.values()))]
    unfused = [
        "base",
        "ScaleAfterMatmul",
        "SbufTranspose",
        "ScaleAfterMatmul+LoadTranspose",
        "ScaleAfterMatmul+FusedDrain",
        "ScaleAfterMatmul+LoadTranspose+FusedDrain",
    ]
    assert [n for n in names if "ActivationReduce" not in n] == unfused
    # The sum of squares is an activation's: each variant also comes with it fused.
    fused = [n for n in names if "ActivationReduce" in n]
    assert sorted(fused) == sorted(
        "ActivationReduce" if n == "base" else f"{n}+ActivationReduce" for n in unfused
    )
    # Without the move, neither applies: x * rs is computed (only an SBUF-to-SBUF DMA can
    # transpose it), and the drain feeds the store.
    assert LoadTranspose().apply(base) is base and FusedDrain().apply(base) is base


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_every_variant_computes_f_numpy(tmp_path: Path, dtype: str) -> None:
    workload = _workload(tmp_path, SLOW_RMSNORM, dtype)
    base = _ir(workload)
    variants = dict(enumerate_rewrite_combinations(base, list(REWRITES.values())))
    # dma_transpose moves 2-byte elements only: an fp32 x keeps its TensorE transpose.
    assert any("LoadTranspose" in n for n in variants) == (dtype == "bfloat16")
    rng = random.Random(dtype)
    for name, variant in variants.items():
        for ir in (variant, sample(variant, rng)):
            kernel = tmp_path / f"{name}.py"
            kernel.write_text(render_ir(ir))
            report = check_kernel(kernel, workload)
            assert report.correct, f"{name}: {report.error}"


def test_knobs_name_the_variant_and_a_wrong_order_is_refused(tmp_path: Path) -> None:
    workload = _workload(tmp_path, SLOW_RMSNORM)
    base = _ir(workload)
    variants = dict(enumerate_rewrite_combinations(base, list(REWRITES.values())))
    state = sample(variants["ScaleAfterMatmul+FusedDrain"], random.Random(1))
    again = ir_from_knobs(base, knobs_to_json(state))
    assert render_ir(again) == render_ir(state)
    # A lowering rewrite drops the graph: the move cannot follow it.
    with pytest.raises(KnobsError, match="does not apply"):
        ir_from_knobs(base, {"variant": "FusedDrain+ScaleAfterMatmul"})


@pytest.mark.parametrize(
    "body",
    [
        # A shift is not a scale: (x + b) @ w is not (x @ w) + b.
        "xn = NKITensorScalar(op0='add', operand0=rs)(data=x)\n"
        "    out = NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)",
        # Scaled rows read as the moving operand: the scale is on K, not on the output rows.
        "xn = NKITensorScalar(op0='multiply', operand0=rs)(data=x)\n"
        "    out = NKIMatmul()(stationary=w2, moving=NKITranspose()(data=xn))",
        # The transposed rows are the result: nothing to move the scale past.
        "xn = NKITensorScalar(op0='multiply', operand0=rs)(data=x)\n"
        "    out = NKITranspose()(data=xn)",
        # An activation's copy with a bias shifts the rows as well as scaling them.
        "xn = NKIActivation(op='copy', scale=rs, bias=rs)(data=x)\n"
        "    out = NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)",
        # Any other activation of the scaled rows is not linear in them.
        "xn = NKIActivation(op='gelu', scale=rs)(data=x)\n"
        "    out = NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)",
    ],
)
def test_no_move_where_the_algebra_does_not_allow_it(tmp_path: Path, body: str) -> None:
    text = (
        HEAD
        + f"""

def f_nkigym(x, w, w2):
    rs = NKITensorReduce(op="add", axis=1)(data=x)
    {body}
    return out


def f_numpy(x, w, w2):
    return x


INPUT_SPECS = {{
    "x": ((256, 256), "bfloat16"),
    "w": ((256, 512), "bfloat16"),
    "w2": ((256, 256), "bfloat16"),
}}
"""
    )
    base = _ir(_workload(tmp_path, text))
    assert ScaleAfterMatmul().apply(base) is base


def test_scaled_rows_read_elsewhere_are_kept_for_those_readers(tmp_path: Path) -> None:
    text = (
        HEAD
        + """

def f_nkigym(x, w):
    rs = NKITensorReduce(op="maximum", axis=1)(data=x)
    xn = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    mm = NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)
    out = NKITensorScalar(op0="add", operand0=NKITensorReduce(op="add", axis=1)(data=xn))(data=mm)
    return out


def f_numpy(x, w):
    x = x.astype(np.float32)
    xn = x * x.max(axis=1, keepdims=True)
    return xn @ w.astype(np.float32) + xn.sum(axis=1, keepdims=True)


INPUT_SPECS = {"x": ((256, 256), "bfloat16"), "w": ((256, 512), "bfloat16")}
"""
    )
    workload = _workload(tmp_path, text)
    moved = ScaleAfterMatmul().apply(_ir(workload))
    assert moved.variant == "ScaleAfterMatmul"
    readers = {op.name: op.srcs for op in moved.operators}
    assert readers["tensor_scalar_xn"] == ("sbuf_x", "sbuf_rs")  # kept for the add
    assert readers["transpose_t2"] == ("sbuf_x",)
    assert readers["tensor_scalar_mm"] == ("sbuf_mm_unscaled", "sbuf_rs")
    assert readers["tensor_reduce_t4"] == ("sbuf_xn",)
    assert readers["tensor_scalar_out"] == ("sbuf_mm", "sbuf_t4")
    kernel = tmp_path / "kernel.py"
    kernel.write_text(render_ir(sample(moved, random.Random(5))))
    report = check_kernel(kernel, workload)
    assert report.correct, report.error


LAYERNORM_MATMUL = (
    HEAD
    + """

def f_nkigym(x, w):
    neg_mean = NKITensorScalar(op0="multiply", operand0=-1.0 / 256)(
        data=NKITensorReduce(op="add", axis=1)(data=x)
    )
    xc = NKITensorScalar(op0="add", operand0=neg_mean)(data=x)
    out = NKIMatmul()(stationary=NKITranspose()(data=xc), moving=w)
    return out


def f_numpy(x, w):
    x = x.astype(np.float32)
    return (x - x.mean(axis=1, keepdims=True)) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((256, 256), "DTYPE"), "w": ((256, 512), "DTYPE")}
"""
)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_a_computed_tile_is_transposed_by_dma_from_sbuf(tmp_path: Path, dtype: str) -> None:
    from kernelopt.ir.rewrites import SbufTranspose

    workload = _workload(tmp_path, LAYERNORM_MATMUL, dtype)
    base = _ir(workload)
    moved = SbufTranspose().apply(base)
    if dtype == "float32":  # dma_transpose moves 2-byte elements only
        assert moved is base
        return
    assert moved.variant == "SbufTranspose"
    kinds = [op.kind for op in moved.operators]
    assert "transpose" not in kinds and "copy" not in kinds and "sbuf_transpose" in kinds
    assert not any(b.memory == "psum" and b.role == "transposed" for b in moved.buffers)
    # The shift keeps the transpose on a computed tile: LoadTranspose has nothing to move.
    assert LoadTranspose().apply(base) is base
    for ir in (moved, sample(moved, random.Random(1)), sample(moved, random.Random(2))):
        text = render_ir(ir)
        assert "nisa.dma_transpose(" in text and "src=sbuf_xc[" in text
        kernel = tmp_path / "kernel.py"
        kernel.write_text(text)
        report = check_kernel(kernel, workload)
        assert report.correct, report.error


def test_an_activation_copy_with_a_row_scale_moves_like_the_tensor_scalar(tmp_path: Path) -> None:
    # x * rs spelled as the ScalarE copy ``activation(copy, scale=rs)``.
    text = SLOW_RMSNORM.replace(
        'xn = NKITensorScalar(op0="multiply", operand0=rs, op1="multiply", operand1=2.0)(data=x)',
        'xn = NKIActivation(op="copy", scale=rs)(data=x)',
    ).replace("(x * rs * 2.0)", "(x * rs)")
    assert 'NKIActivation(op="copy", scale=rs)' in text
    workload = _workload(tmp_path, text)
    base = _ir(workload)
    moved = ScaleAfterMatmul().apply(base)
    assert moved.variant == "ScaleAfterMatmul"
    ops = {op.name: op for op in moved.operators}
    assert ops["transpose_t5"].srcs == ("sbuf_x",)
    assert ops["activation_out"].srcs == ("sbuf_out_unscaled", "sbuf_rs")
    variants = dict(enumerate_rewrite_combinations(base, list(REWRITES.values())))
    assert "ScaleAfterMatmul+LoadTranspose+FusedDrain" in variants
    _sampled_variants_are_correct(tmp_path, workload, base, "ScaleAfterMatmul", seed=3)


NORM_THEN_ACTIVATION = (
    HEAD
    + """

def f_nkigym(x, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt", scale=1.0 / 256, bias=1e-6)(data=ss)
    g = NKIActivation(op="gelu")(data=SCALED)
    return NKIMatmul()(stationary=NKITranspose()(data=g), moving=w)


def f_numpy(x, w):
    x = x.astype(np.float32)
    y = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6)
    g = 0.5 * y * (1.0 + np.vectorize(math.erf)(y / math.sqrt(2.0)))
    return g @ w.astype(np.float32)


INPUT_SPECS = {"x": ((256, 256), "bfloat16"), "w": ((256, 512), "bfloat16")}
"""
).replace("import numpy as np", "import math\n\nimport numpy as np")


@pytest.mark.parametrize(
    "scaled",
    [
        "NKITensorScalar(op0='multiply', operand0=rs)(data=x)",
        "NKIActivation(op='copy', scale=rs)(data=x)",
    ],
)
def test_a_row_scale_folds_into_the_activation_that_reads_it(tmp_path: Path, scaled: str) -> None:
    workload = _workload(tmp_path, NORM_THEN_ACTIVATION.replace("SCALED", scaled))
    base = _ir(workload)
    fused = ScaleIntoActivation().apply(base)
    assert fused.variant == "ScaleIntoActivation"
    assert len(fused.operators) == len(base.operators) - 1  # one element-wise pass fewer
    gelu = next(op for op in fused.operators if op.attr("op") == "gelu")
    assert gelu.srcs == ("sbuf_x", "sbuf_rs")  # gelu(x * rs) in one ScalarE instruction
    variants = dict(enumerate_rewrite_combinations(base, list(REWRITES.values())))
    assert "ScaleIntoActivation+LoadTranspose" not in variants  # the gelu's rows are computed
    _sampled_variants_are_correct(tmp_path, workload, base, "ScaleIntoActivation", seed=5)


@pytest.mark.parametrize(
    "body",
    [
        # The activation scales its input itself: the factors would have to multiply.
        "xn = NKIActivation(op='gelu', scale=2.0)(data=NKITensorScalar(op0='multiply', operand0=rs)(data=x))",
        "xn = NKIActivation(op='gelu', scale=rs)(data=NKITensorScalar(op0='multiply', operand0=2.0)(data=x))",
        # A shift after the scale, or a copy that adds a bias, is not a pure scale.
        "xn = NKIActivation(op='gelu')(data=NKITensorScalar(op0='multiply', operand0=rs, op1='add', operand1=1.0)(data=x))",
        "xn = NKIActivation(op='gelu')(data=NKIActivation(op='copy', scale=rs, bias=rs)(data=x))",
        # A scale read by a tensor_tensor: only an activation can take it as its scale.
        "xn = NKITensorTensor(op='add')(data1=NKITensorScalar(op0='multiply', operand0=rs)(data=x), data2=x)",
    ],
)
def test_no_fold_where_the_activation_cannot_take_the_scale(tmp_path: Path, body: str) -> None:
    base = _ir(_workload(tmp_path, _rows_scaled_by_rs(body)))
    assert ScaleIntoActivation().apply(base) is base


def test_scaled_rows_read_elsewhere_stay_beside_the_folded_activation(tmp_path: Path) -> None:
    text = NORM_THEN_ACTIVATION.replace("SCALED", "xs").replace(
        "    g = NKIActivation",
        "    xs = NKITensorScalar(op0='multiply', operand0=rs)(data=x)\n    g = NKIActivation",
    )
    text = text.replace(
        "return NKIMatmul()(stationary=NKITranspose()(data=g), moving=w)",
        "return NKIMatmul()(stationary=NKITranspose()(data=NKITensorTensor(op='add')"
        "(data1=g, data2=xs)), moving=w)",
    )
    base = _ir(_workload(tmp_path, text))
    fused = ScaleIntoActivation().apply(base)
    assert fused.variant == "ScaleIntoActivation"
    assert len(fused.operators) == len(base.operators)  # xs kept for the add
    gelu = next(op for op in fused.operators if op.attr("op") == "gelu")
    assert gelu.srcs == ("sbuf_x", "sbuf_rs")


LAYERNORM_SCALED_MATMUL = (
    HEAD
    + """

def f_nkigym(x, w):
    neg_mean = NKITensorScalar(op0="multiply", operand0=-1.0 / 256)(
        data=NKITensorReduce(op="add", axis=1)(data=x)
    )
    var = NKITensorScalar(op0="multiply", operand0=1.0 / 256, op1="add", operand1=1e-5)(
        data=NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square", bias=neg_mean)(data=x))
    )
    rstd = NKIActivation(op="rsqrt")(data=var)
    xn = NKITensorScalar(op0="add", operand0=neg_mean, op1="multiply", operand1=rstd)(data=x)
    return NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)


def f_numpy(x, w):
    x = x.astype(np.float32)
    xc = x - x.mean(axis=1, keepdims=True)
    return (xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5)) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((256, 256), "bfloat16"), "w": ((256, 512), "bfloat16")}
"""
)


def test_a_centring_stays_and_only_its_scale_moves_past_the_matmul(tmp_path: Path) -> None:
    workload = _workload(tmp_path, LAYERNORM_SCALED_MATMUL)
    base = _ir(workload)
    moved = ScaleAfterMatmul().apply(base)
    assert moved.variant == "ScaleAfterMatmul"
    ops = {op.name: op for op in moved.operators}
    # x + neg_mean stays before the transpose, which no longer waits for rstd.
    shift = ops["tensor_scalar_xn_shifted"]
    assert shift.srcs == ("sbuf_x", "sbuf_neg_mean") and shift.attr("op0") == "add"
    assert shift.attr("op1") is None
    assert ops["transpose_t7"].srcs == ("sbuf_xn_shifted",)
    scale = next(op for op in moved.operators if op.dst == "sbuf_t8")
    assert scale.srcs == ("sbuf_t8_unscaled", "sbuf_rstd") and scale.attr("op0") == "multiply"
    _sampled_variants_are_correct(tmp_path, workload, base, "ScaleAfterMatmul", seed=11)


@pytest.mark.parametrize(
    "ops",
    [
        "op0='multiply', operand0=rs, op1='add', operand1=1.0",  # a shift after the scale
        "op0='add', operand0=rs, op1='subtract', operand1=2.0",  # two shifts
        "op0='divide', operand0=rs, reverse0=True",  # rs / x is not linear in x
    ],
)
def test_a_shift_after_a_scale_or_a_reversed_division_does_not_move(
    tmp_path: Path, ops: str
) -> None:
    base = _ir(_workload(tmp_path, _rows_scaled_by_rs(f"xn = NKITensorScalar({ops})(data=x)")))
    assert ScaleAfterMatmul().apply(base) is base


@pytest.mark.parametrize(
    "normalise",
    [
        "NKITensorScalar(op0='divide', operand0=total)(data=e)",
        "NKITensorScalar(op0='multiply', operand0=NKIReciprocal()(data=total))(data=e)",
    ],
)
def test_a_softmax_normalisation_by_division_moves_like_the_multiply(
    tmp_path: Path, normalise: str
) -> None:
    text = (
        HEAD
        + f"""

def f_nkigym(s, v):
    e = NKIActivation(op="exp", bias=NKITensorReduce(op="maximum", axis=1, negate=True)(data=s))(
        data=s
    )
    total = NKITensorReduce(op="add", axis=1)(data=e)
    p = {normalise}
    return NKIMatmul()(stationary=NKITranspose()(data=p), moving=v)


def f_numpy(s, v):
    s = s.astype(np.float32)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v.astype(np.float32)


INPUT_SPECS = {{"s": ((256, 256), "bfloat16"), "v": ((256, 512), "bfloat16")}}
"""
    )
    workload = _workload(tmp_path, text)
    base = _ir(workload)
    moved = ScaleAfterMatmul().apply(base)
    assert moved.variant == "ScaleAfterMatmul"
    transpose = next(op for op in moved.operators if op.kind == "transpose")
    assert transpose.srcs == ("sbuf_e",)  # the transpose no longer waits for the row sum
    _sampled_variants_are_correct(tmp_path, workload, base, "ScaleAfterMatmul", seed=13)
