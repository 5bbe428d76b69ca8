"""The VectorE/ScalarE ops (tensor_tensor, tensor_scalar, tensor_reduce) and a second
loaded operand, rendered from sampled knobs and checked in the simulator."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernelopt.ir import build_ir, render_ir, sample
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

BIAS_WORKLOAD = """
from kernelopt.ir import NKIMatmul, NKITensorScalar, NKITensorTensor


def f_nkigym(a, b, c):
    mm = NKIMatmul()(stationary=a, moving=b)
    s = NKITensorTensor(op="add")(data1=mm, data2=c)
    out = NKITensorScalar(
        op0="subtract", operand0=1.0, reverse0=True, op1="multiply", operand1=0.5
    )(data=s)
    return out


def f_numpy(a, b, c):
    return (1.0 - (a.T @ b + c)) * 0.5


INPUT_SPECS = {
    "a": ((256, 256), "bfloat16"),
    "b": ((256, 1024), "bfloat16"),
    "c": ((256, 1024), "float32"),
}
"""


@pytest.mark.parametrize("seed", range(4))
def test_bias_and_scalar_stages_compute_f_numpy(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "workload.py"
    path.write_text(BIAS_WORKLOAD)
    w = load_workload(path)
    base = build_ir(w.f_nkigym, w.input_specs, name="bias")
    ir = base if seed == 0 else sample(base, random.Random(seed))
    kernel = tmp_path / "kernel.py"
    kernel.write_text(render_ir(ir))
    text = kernel.read_text()
    assert "op=nl.add" in text and "reverse0=True" in text and "operand1=0.5" in text
    report = check_kernel(kernel, w)
    assert report.correct, f"{report.error_kind}: {report.error}"


ROWSUM_WORKLOAD = """
import numpy as np

from kernelopt.ir import NKIActivation, NKITensorReduce


def f_nkigym(x):
    e = NKIActivation(op="exp", scale=0.5)(data=x)
    out = NKITensorReduce(op="add")(data=e)
    return out


def f_numpy(x):
    return np.exp(x * 0.5).sum(axis=1, keepdims=True)


INPUT_SPECS = {"x": ((256, 1024), "float32")}
"""


@pytest.mark.parametrize("seed", range(4))
def test_row_reduction_computes_f_numpy(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "workload.py"
    path.write_text(ROWSUM_WORKLOAD)
    w = load_workload(path)
    base = build_ir(w.f_nkigym, w.input_specs, name="rowsum")
    ir = base if seed == 0 else sample(base, random.Random(seed))
    kernel = tmp_path / "kernel.py"
    kernel.write_text(render_ir(ir))
    assert "nisa.tensor_reduce(" in kernel.read_text()
    report = check_kernel(kernel, w)
    assert report.correct, f"{report.error_kind}: {report.error}"
