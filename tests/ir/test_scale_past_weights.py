"""ScaleAfterMatmul through a weight: an rms norm's gamma between the row scale and the matmul.

``(x * rs) * g`` is ``(x * g) * rs`` for a full-shape weight ``g``, and scaling the
rows of ``x`` commutes with scaling the rows of ``x^T`` by a [K, 1] column, so the row
scale ``rs`` still moves past the matmul. Numerics are checked in the simulator.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_graph_rewrites import HEAD, _ir, _sampled_variants_are_correct, _workload

from kernelopt.ir import REWRITES, enumerate_rewrite_combinations, validity_report
from kernelopt.ir.graph_rewrites import ScaleAfterMatmul

NORM = """
def f_nkigym(x, g, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt")(
        data=NKITensorScalar(op0="multiply", operand0=1.0 / 256, op1="add", operand1=1e-6)(data=ss)
    )
    xn = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
"""

# gamma as a [K, 1] column of the transposed rows.
GAMMA_COLUMN = (
    HEAD
    + NORM
    + """    xt = NKITensorScalar(op0="multiply", operand0=g)(data=NKITranspose()(data=xn))
    return NKIMatmul()(stationary=xt, moving=w)


def f_numpy(x, g, w):
    x = x.astype(np.float32)
    rs = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6)
    return (x * rs * g.astype(np.float32).T) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((256, 256), "bfloat16"), "g": ((256, 1), "float32"),
               "w": ((256, 512), "bfloat16")}
"""
)

# gamma at x's full shape, multiplied element by element (either operand order).
GAMMA_FULL = (
    HEAD
    + NORM
    + """    weighted = NKITensorTensor(op="multiply")(ORDER)
    return NKIMatmul()(stationary=NKITranspose()(data=weighted), moving=w)


def f_numpy(x, g, w):
    x = x.astype(np.float32)
    rs = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6)
    return (x * rs * g.astype(np.float32)) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((256, 256), "bfloat16"), "g": ((256, 256), "bfloat16"),
               "w": ((256, 512), "bfloat16")}
"""
)
ORDERS = ["data1=xn, data2=g", "data1=g, data2=xn"]


def _op(ir, kind: str):
    return next(op for op in ir.operators if op.kind == kind)


def test_a_gamma_column_after_the_transpose_lets_the_row_scale_move(tmp_path: Path) -> None:
    w = _workload(tmp_path, GAMMA_COLUMN)
    moved = ScaleAfterMatmul().apply(_ir(w))
    assert moved.variant == "ScaleAfterMatmul"
    assert _op(moved, "transpose").srcs == ("sbuf_x",)  # no longer waits for the norm
    weights = [op for op in moved.operators if op.kind == "tensor_scalar" and "sbuf_g" in op.srcs]
    assert len(weights) == 1 and weights[0].srcs[0] == _op(moved, "transpose").dst.replace(
        "psum", "sbuf"
    )
    scale = next(op for op in moved.operators if "sbuf_rs" in op.srcs and op.kind != "activation")
    assert scale.srcs[0].endswith("_unscaled")  # the product, scaled by rs
    assert validity_report(moved) == []
    names = [n for n, _ in enumerate_rewrite_combinations(_ir(w), list(REWRITES.values()))]
    assert "ScaleAfterMatmul+LoadTranspose" in names  # x^T now comes straight from HBM
    _sampled_variants_are_correct(tmp_path, w, _ir(w), "ScaleAfterMatmul", seed=3)


@pytest.mark.parametrize("order", ORDERS)
def test_a_full_shape_weight_between_scale_and_transpose_is_moved_past(
    tmp_path: Path, order: str
) -> None:
    w = _workload(tmp_path, GAMMA_FULL.replace("ORDER", order))
    moved = ScaleAfterMatmul().apply(_ir(w))
    assert moved.variant == "ScaleAfterMatmul"
    weighted = _op(moved, "tensor_tensor")
    assert sorted(weighted.srcs) == ["sbuf_g", "sbuf_x"]  # x * g, unscaled
    assert _op(moved, "transpose").srcs == (weighted.dst,)
    assert validity_report(moved) == []
    _sampled_variants_are_correct(tmp_path, w, _ir(w), "ScaleAfterMatmul", seed=5)


@pytest.mark.parametrize(
    "body",
    [
        # The weighted rows are read by something else too: the scale must stay on them.
        GAMMA_FULL.replace("ORDER", ORDERS[0]).replace(
            "    return NKIMatmul()(stationary=NKITranspose()(data=weighted), moving=w)",
            "    t = NKITensorTensor(op='add')(data1=weighted, data2=x)\n"
            "    return NKIMatmul()(stationary=NKITranspose()(data=t), moving=w)",
        ),
        # An add of the weight, not a multiply: (x * rs) + g is not (x + g) * rs.
        GAMMA_FULL.replace("ORDER", ORDERS[0]).replace('op="multiply")(data1', 'op="add")(data1'),
        # The gamma-scaled x^T is the matmul's moving side: rs would scale its columns.
        GAMMA_COLUMN.replace(
            "return NKIMatmul()(stationary=xt, moving=w)",
            "return NKIMatmul()(stationary=w, moving=xt)",
        ),
    ],
)
def test_no_move_through_a_weight_the_algebra_does_not_allow(tmp_path: Path, body: str) -> None:
    base = _ir(_workload(tmp_path, body))
    assert ScaleAfterMatmul().apply(base) is base
