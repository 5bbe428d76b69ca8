"""Workloads a user may write that the shipped and random ones do not: a [P, 1] column
given as an input, a matmul with one output row, a transposed matmul result. Every
sampled state of every variant must render to a kernel the simulator finds equal to
the workload's own numpy oracle (written apart from the op classes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ir_support import variant_failures

HEAD = """import numpy as np
from kernelopt.ir import NKIMatmul, NKITensorScalar, NKITensorTensor, NKITranspose
"""

# A per-row scale read from HBM as a [rows, 1] input: its one-element free dim has no
# loop, so its load must index column 0 (it named the loop variable b2 of no loop).
INPUT_COLUMN = """
def f_nkigym(x, s):
    return NKITensorScalar(op0="multiply", operand0=s, op1="add", operand1=1.0)(data=x)

def f_numpy(x, s):
    return x.astype(np.float32) * s.astype(np.float32) + 1.0

INPUT_SPECS = {"x": ((256, 256), "bfloat16"), "s": ((256, 1), "float32")}
"""

# A matrix-vector product: M = 1 makes the output's partition dim one element.
ONE_ROW = """
def f_nkigym(xT, w, r):
    return NKITensorTensor(op="add")(data1=NKIMatmul()(stationary=xT, moving=w), data2=r)

def f_numpy(xT, w, r):
    return xT.astype(np.float32).T @ w.astype(np.float32) + r.astype(np.float32)

INPUT_SPECS = {"xT": ((256, 1), "bfloat16"), "w": ((256, 96), "bfloat16"), "r": ((1, 96), "bfloat16")}
"""

# A matmul result transposed: when its drain folds K blocks into SBUF it is fp32, so the
# TensorE transpose must write fp32 PSUM and a dma_transpose (2-byte only) cannot move it.
TRANSPOSED_PRODUCT = """
def f_nkigym(xT, w, b):
    h = NKIMatmul()(stationary=xT, moving=w)
    return NKITensorTensor(op="add")(data1=NKITranspose()(data=h), data2=b)

def f_numpy(xT, w, b):
    return (xT.astype(np.float32).T @ w.astype(np.float32)).T + b.astype(np.float32)

INPUT_SPECS = {"xT": ((256, 128), "bfloat16"), "w": ((256, 256), "bfloat16"),
               "b": ((256, 128), "bfloat16")}
"""


# Inputs named as the kernel's own locals (the DMA offsets row and col, the block loop
# b1): the kernel assigned them and then indexed an int.
LOCAL_NAMES = """
def f_nkigym(row, col, b1):
    scaled = NKITensorScalar(op0="multiply", operand0=col)(data=row)
    return NKITensorTensor(op="add")(data1=scaled, data2=b1)

def f_numpy(row, col, b1):
    return row.astype(np.float32) * col.astype(np.float32) + b1.astype(np.float32)

INPUT_SPECS = {"row": ((256, 1024), "bfloat16"), "col": ((256, 1), "float32"),
               "b1": ((256, 1024), "bfloat16")}
"""


def _failures(tmp_path: Path, name: str, body: str, seeds: int) -> tuple[int, list[str]]:
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + body)
    return variant_failures(path, name, seeds)


@pytest.mark.parametrize(
    ("name", "body"),
    [("input_column", INPUT_COLUMN), ("one_row", ONE_ROW)],
    ids=["input_column", "one_row"],
)
def test_one_element_dims_render_without_a_loop_variable(
    tmp_path: Path, name: str, body: str
) -> None:
    checked, failures = _failures(tmp_path, name, body, seeds=4)
    assert checked >= 4
    assert failures == []


def test_a_transposed_matmul_result_is_correct_in_every_variant(tmp_path: Path) -> None:
    checked, failures = _failures(tmp_path, "transposed_product", TRANSPOSED_PRODUCT, seeds=4)
    assert checked >= 8  # base and SbufTranspose at least
    assert failures == []


def test_inputs_named_as_kernel_locals_are_read_through_an_alias(tmp_path: Path) -> None:
    checked, failures = _failures(tmp_path, "local_names", LOCAL_NAMES, seeds=4)
    assert checked >= 4
    assert failures == []
