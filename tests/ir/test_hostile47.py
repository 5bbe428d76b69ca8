"""Workloads written the way an engineer might write them that the KernelIR got wrong
(found by writing many by hand): each test fails without its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from ir_support import variant_failures

HEAD = """import numpy as np
from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

def f_numpy(**kw):
    return f_nkigym(**{k: np.asarray(v, np.float32) for k, v in kw.items()})
"""

RMS_MATMUL = """
def f_nkigym(x, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt", scale=1.0 / 256, bias=1e-6)(data=ss)
    return NKIMatmul()(stationary=NKITranspose()(data=NKITensorScalar(op0="multiply", operand0=rs)(data=x)), moving=w)

INPUT_SPECS = {"x": ((128, 256), "XDTYPE"), "w": ((256, 384), "WDTYPE")}
"""

TRANSPOSED = """
def f_nkigym(x, w):
    return NKIActivation(op="relu")(data=NKIMatmul()(stationary=NKITranspose()(data=x), moving=w))

INPUT_SPECS = {"x": ((128, 256), "XDTYPE"), "w": ((256, 384), "WDTYPE")}
"""


@pytest.mark.parametrize(
    ("body", "x", "w"),
    [
        (RMS_MATMUL, "float16", "bfloat16"),
        (RMS_MATMUL, "bfloat16", "float16"),
        (RMS_MATMUL, "float8_e4m3", "bfloat16"),
        (TRANSPOSED, "float16", "bfloat16"),
    ],
    ids=["normed_fp16_x", "normed_bf16_x", "normed_fp8_x", "transposed_fp16_x"],
)
def test_a_matmul_of_two_narrow_dtypes_writes_the_computed_side_in_the_others(
    tmp_path: Path, body: str, x: str, w: str
) -> None:
    # Before: only fp32 beside a 2-byte dtype was cast; an fp16 x normed (or transposed)
    # times a bf16 w had no state at all (isa_dtype in every draw). Once cast, a
    # transpose's PSUM tile must keep its data's dtype (nc_transpose writes that or
    # fp32), and no DMA transpose may take the cast's place (dma_transpose casts none).
    path = tmp_path / "mixed.py"
    path.write_text(HEAD + body.replace("XDTYPE", x).replace("WDTYPE", w))
    checked, failures = variant_failures(path, "mixed")
    assert checked >= 2
    assert failures == []


DEFAULT_EPS = """
def f_nkigym(x, w, eps=1e-3):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt", scale=1.0 / x.shape[1], bias=eps)(data=ss)
    return NKIMatmul()(stationary=NKITranspose()(data=NKITensorScalar(op0="multiply", operand0=rs)(data=x)), moving=w)

INPUT_SPECS = {"x": ((128, 256), "bfloat16"), "w": ((256, 384), "bfloat16")}
"""


def test_a_parameter_with_a_default_left_out_of_input_specs_keeps_its_default(
    tmp_path: Path,
) -> None:
    # ``def f_nkigym(x, w, eps=1e-3)`` with INPUT_SPECS naming x and w: before, the build
    # stopped on the parameters not matching the INPUT_SPECS keys.
    from kernelopt.ir import build_ir
    from kernelopt.ir.trace import IRBuildError
    from kernelopt.workload import load_workload

    path = tmp_path / "eps.py"
    path.write_text(HEAD + DEFAULT_EPS)
    w = load_workload(path)
    ir = build_ir(w.f_nkigym, w.input_specs, name="eps")
    assert [t.name for t in ir.inputs] == ["x", "w"]
    assert any(op.attr("bias") == 1e-3 for op in ir.operators if op.kind == "activation")
    checked, failures = variant_failures(path, "eps")
    assert checked >= 2 and failures == []
    # A parameter without a default is still required.
    with pytest.raises(IRBuildError, match="only a parameter with a default may be left out"):
        build_ir(w.f_nkigym, {"x": ((128, 256), "bfloat16")}, name="eps")
