"""A matmul of an fp32 operand and a bf16 one: nc_matmul takes one dtype, so the side an
instruction writes is written in the other's dtype (``trace.narrow_matmul_operands``).
Before, an fp32 ``x`` normed (or transposed) times a bf16 ``w`` built and showed, and
`kernelopt ir sample` found no state at all (``isa_dtype`` in every draw)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ir_support import variant_failures

HEAD = """import numpy as np
from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

def rms(x):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt", scale=1.0 / 256, bias=1e-6)(data=ss)
    return NKITensorScalar(op0="multiply", operand0=rs)(data=x)

def oracle(x):
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)
"""

# fp32 x normed, then times bf16 w: the norm's multiply writes bf16.
NORMED_FP32 = """
def f_nkigym(x, w):
    return NKIMatmul()(stationary=NKITranspose()(data=rms(x)), moving=w)

def f_numpy(x, w):
    return oracle(x.astype(np.float32)) @ w.astype(np.float32)

INPUT_SPECS = {"x": ((128, 256), "float32"), "w": ((256, 384), "bfloat16")}
"""

# fp32 x read as is, transposed in-kernel: the transpose's copy out of PSUM writes bf16.
TRANSPOSED_FP32 = """
def f_nkigym(x, w):
    return NKIActivation(op="silu")(data=NKIMatmul()(stationary=NKITranspose()(data=x), moving=w))

def f_numpy(x, w):
    h = x.astype(np.float32) @ w.astype(np.float32)
    return h / (1.0 + np.exp(-h))

INPUT_SPECS = {"x": ((128, 256), "float32"), "w": ((256, 384), "bfloat16")}
"""

# bf16 x normed, times an fp32 w read as is: the norm writes fp32 instead.
FP32_WEIGHT = """
def f_nkigym(x, w):
    return NKIMatmul()(stationary=NKITranspose()(data=rms(x)), moving=w)

def f_numpy(x, w):
    return oracle(x.astype(np.float32)) @ w.astype(np.float32)

INPUT_SPECS = {"x": ((128, 256), "bfloat16"), "w": ((256, 384), "float32")}
"""

# Two inputs read as is: no instruction writes either, so no state exists.
TWO_INPUTS = """
def f_nkigym(xT, w):
    return NKIMatmul()(stationary=xT, moving=w)

def f_numpy(xT, w):
    return xT.astype(np.float32).T @ w.astype(np.float32)

INPUT_SPECS = {"xT": ((256, 128), "float32"), "w": ((256, 384), "bfloat16")}
"""


def _check(tmp_path: Path, name: str, body: str) -> tuple[int, list[str]]:
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + body)
    return variant_failures(path, name, skip_unsampleable=True)


@pytest.mark.parametrize(
    ("name", "body", "least"),
    [("normed", NORMED_FP32, 4), ("transposed", TRANSPOSED_FP32, 1), ("weight", FP32_WEIGHT, 4)],
    ids=["normed_fp32_x", "transposed_fp32_x", "fp32_weight"],
)
def test_a_matmul_of_fp32_and_bf16_sides_has_correct_states(
    tmp_path: Path, name: str, body: str, least: int
) -> None:
    checked, failures = _check(tmp_path, name, body)
    assert checked >= least
    assert failures == []


def test_two_inputs_of_two_dtypes_read_as_is_still_have_no_state(tmp_path: Path) -> None:
    checked, failures = _check(tmp_path, "two_inputs", TWO_INPUTS)
    assert checked == 0


# A bf16 [P, 1] input as an activation's scale (and the same column as a bias): ScalarE
# takes only a float32 scale vector, so the column is copied to float32 once.
BF16_SCALE_COLUMN = """
def f_nkigym(x, c, w):
    g = NKIActivation(op="gelu", scale=c, bias=c)(data=x)
    y = NKIActivation(op="copy", scale=c)(data=x)
    h = NKIMatmul()(stationary=NKITranspose()(data=g), moving=w)
    return NKIMatmul()(stationary=NKITranspose()(data=y), moving=w)

def f_numpy(x, c, w):
    x, c = x.astype(np.float32), c.astype(np.float32)
    return (x * c) @ w.astype(np.float32)

INPUT_SPECS = {"x": ((256, 256), "bfloat16"), "c": ((256, 1), "bfloat16"),
               "w": ((256, 384), "bfloat16")}
"""


def test_a_bf16_column_as_an_activation_scale_is_widened_once_and_every_state_runs(
    tmp_path: Path,
) -> None:
    from kernelopt.ir import build_ir
    from kernelopt.workload import load_workload

    path = tmp_path / "scaled.py"
    path.write_text(HEAD + BF16_SCALE_COLUMN)
    w = load_workload(path)
    ir = build_ir(w.f_nkigym, w.input_specs, name="scaled")
    widened = [b for b in ir.buffers if b.name.startswith("sbuf_c_f32")]
    assert len(widened) == 1 and widened[0].dtype == "float32"
    scales = []
    for op in ir.operators:
        columns = op.attr("columns", ()) if op.kind == "activation" else ()
        if "scale" in columns:
            scales.append(op.srcs[len(op.srcs) - len(columns) + columns.index("scale")])
    assert scales == ["sbuf_c_f32", "sbuf_c_f32"]  # a bias may stay bf16; a scale may not
    checked, failures = _check(tmp_path, "scaled", BF16_SCALE_COLUMN)
    assert checked >= 4 and failures == []
