"""ChainedTensorScalars: two one-op tensor_scalars in a row issued as one two-op instruction.

``tensor_scalar`` computes ``(data op0 operand0) op1 operand1`` in one pass, either
operand a number or a [P, 1] column, so ``(x + a) * c`` written as two calls (a layer
norm's centring, then its scaling) needs one pass over the rows, not two.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kernelopt.ir import REWRITES, enumerate_rewrite_combinations, render_ir, sample
from kernelopt.ir.build import build_ir
from kernelopt.ir.graph_rewrites import ChainedTensorScalars
from kernelopt.ir.mac import roofline_work
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

LAYERNORM = """
import numpy as np

from kernelopt.ir import NKIActivation, NKITensorReduce, NKITensorScalar, NKITensorTensor


def f_nkigym(x):
    neg_mean = NKITensorScalar(op0="multiply", operand0=-1.0 / 512)(
        data=NKITensorReduce(op="add", axis=1)(data=x)
    )
    var = NKITensorScalar(op0="multiply", operand0=1.0 / 512, op1="add", operand1=1e-5)(
        data=NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square", bias=neg_mean)(data=x))
    )
    rstd = NKIActivation(op="rsqrt")(data=var)
    BODY


def f_numpy(x):
    x = x.astype(np.float32)
    xc = x - x.mean(axis=1, keepdims=True)
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5)
    return EXPECTED


INPUT_SPECS = {"x": ((256, 512), "bfloat16")}
"""

CENTRE_THEN_SCALE = """xc = NKITensorScalar(op0="add", operand0=neg_mean)(data=x)
    return NKITensorScalar(op0="multiply")(data=xc, operand0=rstd)"""


def _workload(tmp_path: Path, body: str, expected: str = "xc * rstd"):
    path = tmp_path / "workload.py"
    path.write_text(LAYERNORM.replace("BODY", body).replace("EXPECTED", expected))
    return load_workload(path)


def _ir(workload):
    return build_ir(workload.f_nkigym, workload.input_specs, workload.name)


def _tensor_scalars(ir):
    return [op for op in ir.operators if op.kind == "tensor_scalar"]


def _every_sampled_variant_is_correct(tmp_path: Path, workload, base, seed: int = 0) -> int:
    """One sampled state of every variant with the rewrite checks correct; how many."""
    rng, checked = random.Random(seed), 0
    for name, variant in enumerate_rewrite_combinations(base, list(REWRITES.values())):
        if "ChainedTensorScalars" not in name:
            continue
        kernel = tmp_path / f"{name}.py"
        kernel.write_text(render_ir(sample(variant, rng)))
        report = check_kernel(kernel, workload)
        assert report.correct, f"{name}: {report.error}"
        checked += 1
    return checked


def test_a_centring_then_a_scaling_becomes_one_two_op_instruction(tmp_path: Path) -> None:
    workload = _workload(tmp_path, CENTRE_THEN_SCALE)
    base = _ir(workload)
    fused = ChainedTensorScalars().apply(base)
    assert fused.variant == "ChainedTensorScalars"
    assert len(fused.operators) == len(base.operators) - 1  # one pass over the rows fewer
    (last,) = [op for op in _tensor_scalars(fused) if op.srcs[0] == "sbuf_x"]
    assert last.srcs == ("sbuf_x", "sbuf_neg_mean", "sbuf_rstd")  # both operands columns
    assert (last.attr("op0"), last.attr("op1")) == ("add", "multiply")
    assert _every_sampled_variant_is_correct(tmp_path, workload, base) >= 2


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # Numbers and reversed operands carry over: (2 - x) / 4, then + the column.
        (
            'a = NKITensorScalar(op0="subtract", operand0=2.0, reverse0=True)(data=x)\n'
            '    b = NKITensorScalar(op0="divide", operand0=4.0)(data=a)\n'
            '    return NKITensorScalar(op0="add", operand0=rstd)(data=b)',
            "(2.0 - x) / 4.0 + rstd",
        ),
        # A column divided by the rows (reverse), then a number subtracted.
        (
            'a = NKITensorScalar(op0="divide", operand0=rstd, reverse0=True)(data=NKIActivation(op="exp")(data=x))\n'
            '    return NKITensorScalar(op0="subtract", operand0=0.5)(data=a)',
            "rstd / np.exp(x) - 0.5",
        ),
    ],
)
def test_numbers_columns_and_reversed_operands_compute_the_same(
    tmp_path: Path, body: str, expected: str
) -> None:
    workload = _workload(tmp_path, body, expected)
    base = _ir(workload)
    fused = ChainedTensorScalars().apply(base)
    assert len(_tensor_scalars(fused)) == len(_tensor_scalars(base)) - 1
    assert _every_sampled_variant_is_correct(tmp_path, workload, base, seed=3) >= 1


def test_a_chain_of_three_fuses_its_first_two(tmp_path: Path) -> None:
    body = (
        'a = NKITensorScalar(op0="add", operand0=neg_mean)(data=x)\n'
        '    b = NKITensorScalar(op0="multiply", operand0=rstd)(data=a)\n'
        '    return NKITensorScalar(op0="multiply", operand0=3.0)(data=b)'
    )
    workload = _workload(tmp_path, body, "xc * rstd * 3.0")
    base = _ir(workload)
    fused = ChainedTensorScalars().apply(base)
    assert len(_tensor_scalars(fused)) == len(_tensor_scalars(base)) - 1
    ops = {op.dst: op for op in _tensor_scalars(fused)}
    assert ops["sbuf_b"].srcs == ("sbuf_x", "sbuf_neg_mean", "sbuf_rstd")
    (third,) = [op for op in ops.values() if op.srcs == ("sbuf_b",)]
    assert (third.attr("op0"), third.attr("op1"), third.attr("operand0")) == ("multiply", None, 3.0)
    assert _every_sampled_variant_is_correct(tmp_path, workload, base, seed=1) >= 1


@pytest.mark.parametrize(
    "body",
    [
        # The centred rows are read twice: they stay.
        'xc = NKITensorScalar(op0="add", operand0=neg_mean)(data=x)\n'
        '    return NKITensorTensor(op="add")(data1=NKITensorScalar(op0="multiply", operand0=rstd)(data=xc), data2=xc)',
        # The first already applies two ops: three do not fit one instruction.
        'xc = NKITensorScalar(op0="add", operand0=neg_mean, op1="multiply", operand1=2.0)(data=x)\n'
        '    return NKITensorScalar(op0="multiply", operand0=rstd)(data=xc)',
        # The second applies two ops.
        'xc = NKITensorScalar(op0="add", operand0=neg_mean)(data=x)\n'
        '    return NKITensorScalar(op0="multiply", operand0=rstd, op1="add", operand1=1.0)(data=xc)',
        # An activation between them.
        'xc = NKIActivation(op="copy", bias=neg_mean)(data=x)\n'
        '    return NKITensorScalar(op0="multiply", operand0=rstd)(data=xc)',
    ],
)
def test_no_fusion_where_one_instruction_cannot_compute_both(tmp_path: Path, body: str) -> None:
    base = _ir(_workload(tmp_path, body))
    assert ChainedTensorScalars().apply(base) is base


def test_the_roofline_counts_the_fused_pass(tmp_path: Path) -> None:
    """The element-wise bound is the least over the variants, so no kernel of the math
    beats its roofline. Five full passes over x as written (a row sum, the square, its
    row sum, the centring, the scaling); the square's row sum carried by the square
    (ActivationReduce) and the fusion here each take one away."""
    workload = _workload(tmp_path, CENTRE_THEN_SCALE)
    work = roofline_work(workload.f_nkigym, workload.input_specs)
    passes = {sum(counts) // (256 * 512) for counts in work.fused_elementwise}
    assert passes == {5, 4, 3}
