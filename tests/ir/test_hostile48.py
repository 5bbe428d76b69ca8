"""Workloads written the way an engineer might write them that the KernelIR got wrong
(the fifth hand-written sweep): each test fails without its fix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ir_support import variant_failures

HEAD = """import numpy as np
from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

def f_numpy(**kw):
    return f_nkigym(**{k: np.asarray(v, np.float32) for k, v in kw.items()})
"""


def _base_state_correct(path: Path, name: str) -> bool:
    """One drawn state of the base variant, rendered and checked on the simulator."""
    import random

    from kernelopt.ir import build_ir, render_ir, sample
    from kernelopt.sim import check_kernel
    from kernelopt.workload import load_workload

    w = load_workload(path)
    state = sample(build_ir(w.f_nkigym, w.input_specs, name=name), random.Random(0))
    kernel = path.parent / "kernel.py"
    kernel.write_text(render_ir(state))
    return check_kernel(kernel, w).correct


ONE_TUPLE = """
def f_nkigym(x, w):
    out = NKIActivation(op="relu")(data=NKIMatmul()(stationary=NKITranspose()(data=x), moving=w))
    return (out,)

INPUT_SPECS = {"x": ((128, 128), "bfloat16"), "w": ((128, 256), "bfloat16")}
"""


def test_a_one_element_tuple_is_the_output(tmp_path: Path) -> None:
    # ``return (out,)``: before, refused as "must return one traced tensor, got tuple".
    path = tmp_path / "one_tuple.py"
    path.write_text(HEAD + ONE_TUPLE)
    checked, failures = variant_failures(path, "one_tuple")
    assert checked >= 1
    assert failures == []


def test_several_outputs_are_refused_with_what_to_write_instead() -> None:
    from kernelopt.ir import NKIActivation, NKITensorReduce, build_ir
    from kernelopt.ir.trace import IRBuildError

    def two(x):
        e = NKIActivation(op="exp")(data=x)
        return e, NKITensorReduce(op="add", axis=1)(data=e)

    with pytest.raises(IRBuildError, match="returns 2 values.*one output.*one workload per output"):
        build_ir(two, {"x": ((128, 256), "float32")}, name="two")

    def no_return(x):
        NKIActivation(op="exp")(data=x)

    with pytest.raises(IRBuildError, match="returned None.*return missing"):
        build_ir(no_return, {"x": ((128, 256), "float32")}, name="none")


def test_a_zero_d_array_is_a_number_operand() -> None:
    # ``operand0=np.array(0.5)`` (a config value): before, refused as not a number.
    from kernelopt.ir import NKIActivation, NKITensorScalar, build_ir

    x = np.linspace(-1, 1, 128 * 4, dtype=np.float32).reshape(128, 4)
    got = NKITensorScalar(op0="multiply", operand0=np.array(0.5), op1="add", operand1=np.array(2))(
        data=x
    )
    np.testing.assert_allclose(got, x * 0.5 + 2)
    got = NKIActivation(op="exp", scale=np.array(2.0, np.float32))(data=x)
    np.testing.assert_allclose(got, np.exp(2 * x), rtol=1e-6)

    def f(x):
        return NKITensorScalar(op0="multiply", operand0=np.array(0.5, np.float32))(data=x)

    ir = build_ir(f, {"x": ((128, 256), "float32")}, name="zero_d")
    (op,) = [o for o in ir.operators if o.kind == "tensor_scalar"]
    assert op.attr("operand0") == 0.5


def test_none_spells_an_operand_not_given() -> None:
    # ``op1=None, operand1=None`` (a signature's defaults written out): before, refused
    # as "operand1 given without op1=".
    from kernelopt.ir import NKITensorScalar
    from kernelopt.ir.ops import OpError

    x = np.linspace(-1, 1, 128 * 4, dtype=np.float32).reshape(128, 4)
    op = NKITensorScalar(op0="multiply", operand0=-1, op1=None, operand1=None, reverse1=False)
    np.testing.assert_allclose(op(data=x), -x)
    with pytest.raises(OpError, match="operand1 given without op1="):
        NKITensorScalar(op0="multiply", operand0=-1, op1=None, operand1=0)(data=x)


NONE_ATTRS = """
def f_nkigym(x):
    m = NKITensorReduce(op="max", axis=1)(data=x)
    neg = NKITensorScalar(op0="multiply", operand0=-1, op1=None, operand1=None)(data=m)
    return NKIActivation(op="exp", bias=neg)(data=x)

INPUT_SPECS = {"x": ((128, 256), "float32")}
"""


def test_none_attrs_render_and_check(tmp_path: Path) -> None:
    path = tmp_path / "none_attrs.py"
    path.write_text(HEAD + NONE_ATTRS)
    checked, failures = variant_failures(path, "none_attrs")
    assert checked >= 1
    assert failures == []


RESIDUAL = """
from kernelopt.ir import NKITensorTensor

def rms(t):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=t))
    rs = NKIActivation(op="rsqrt", scale=1.0 / 256, bias=1e-6)(data=ss)
    return NKITensorScalar(op0="multiply", operand0=rs)(data=t)

def residual(n_res, n, w):
    return NKITensorTensor(op="add")(data1=n_res, data2=NKIMatmul()(stationary=NKITranspose()(data=n), moving=w))

def f_nkigym(x, x_res, w):
    return residual(rms(x_res), rms(x), w)

INPUT_SPECS = {"x": ((128, 256), "bfloat16"), "x_res": ((128, 256), "bfloat16"), "w": ((256, 256), "bfloat16")}
"""


def test_a_residual_around_its_own_projection_is_refused_with_the_rewrite(tmp_path: Path) -> None:
    # rms(x) + rms(x) @ w (w square): the refusal said why, not what to write; the
    # rewrite it now names (x given twice, as two inputs) builds and checks.
    from kernelopt.ir import build_ir
    from kernelopt.ir.trace import IRBuildError
    from kernelopt.workload import load_workload

    path = tmp_path / "resid.py"
    path.write_text(HEAD + RESIDUAL)
    mod = load_workload(path).module

    def once(x, w):
        n = mod.rms(x)
        return mod.residual(n, n, w)

    one = {"x": ((128, 256), "bfloat16"), "w": ((256, 256), "bfloat16")}
    with pytest.raises(IRBuildError, match=r"give x twice, as two inputs.*x_res \+ f\(x\) @ w"):
        build_ir(once, one, name="once")
    assert _base_state_correct(path, "resid")


def test_a_variable_names_the_op_its_statement_assigns_not_a_helpers() -> None:
    # h = add(rms(x), rms(r)): names were given to op calls by their count in the source,
    # so the first op rms made (x squared) was buffer sbuf_h and the add a generated t10.
    from kernelopt.ir import (
        NKIActivation,
        NKIMatmul,
        NKITensorReduce,
        NKITensorScalar,
        NKITensorTensor,
        NKITranspose,
        build_ir,
    )

    def rms(t):
        ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=t))
        rs = NKIActivation(op="rsqrt", scale=1 / 256, bias=1e-6)(data=ss)
        return NKITensorScalar(op0="multiply", operand0=rs)(data=t)

    mm = NKIMatmul()

    def f(x, r, w):
        h = NKITensorTensor(op="add")(data1=rms(x), data2=rms(r))
        y = mm(NKITranspose()(data=h), moving=w)
        return y

    specs = {"x": ((128, 256), "bfloat16"), "r": ((128, 256), "bfloat16")}
    ir = build_ir(f, {**specs, "w": ((256, 384), "bfloat16")}, name="names")
    assert ir.producers["sbuf_h"].kind == "tensor_tensor"
    assert "psum_y" in {b.name for b in ir.buffers}  # an op object made once, called here
    assert not any(b.name.startswith(("sbuf_ss", "sbuf_rs")) for b in ir.buffers)


@pytest.mark.parametrize(
    ("body", "specs", "says"),
    [
        (
            "NKIMatmul()(stationary=x, moving=w)",
            {"x": ((128, 256), "bfloat16"), "w": ((256, 384), "bfloat16")},
            r"stationary is \[K, M\].*NKIMatmul\(\)\(stationary=NKITranspose\(\)\(data=x\)",
        ),
        (
            "NKITensorScalar(op0='multiply', operand0=w)(data=x)",
            {"x": ((128, 256), "bfloat16"), "w": ((256, 1), "float32")},
            r"operand0 holds one value per row.*one per column.*NKITranspose",
        ),
        (
            "NKIActivation(op='copy', scale=w)(data=x)",
            {"x": ((128, 256), "bfloat16"), "w": ((256,), "float32")},
            r"only 2-D tensors are supported, got \(256,\): give a vector as a \(256, 1\) column",
        ),
        (
            "NKITensorReduce(op='add', axis=0)(data=x)",
            {"x": ((128, 256), "bfloat16"), "w": ((256, 1), "float32")},
            r"axis must be 1.*reduce NKITranspose\(\)\(data=...\) along axis=1",
        ),
    ],
    ids=["untransposed_stationary", "gamma_per_column", "vector_input", "reduce_axis0"],
)
def test_the_mismatches_written_most_say_what_to_write(body: str, specs: dict, says: str) -> None:
    # Each was refused with the reason only (axis sizes differ, only 2-D, free axes only).
    from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, build_ir
    from kernelopt.ir.trace import IRBuildError

    ops = {
        "NKIActivation": NKIActivation,
        "NKIMatmul": NKIMatmul,
        "NKITensorReduce": NKITensorReduce,
        "NKITensorScalar": NKITensorScalar,
    }

    def f(x, w):
        return eval(body, ops, {"x": x, "w": w})

    with pytest.raises(IRBuildError, match=says):
        build_ir(f, specs, name="mismatch")


WIDE_W = """
def f_nkigym(x, w):
    return NKIActivation(op="gelu_apprx_sigmoid")(data=NKIMatmul()(stationary=NKITranspose()(data=x), moving=w))

INPUT_SPECS = {"x": ((128, 256), "XDTYPE"), "w": ((256, 256), "float32")}
"""


@pytest.mark.parametrize("x", ["float16", "bfloat16"])
def test_a_narrow_input_transposed_beside_an_fp32_weight_is_written_in_fp32(
    tmp_path: Path, x: str
) -> None:
    # fp16 activations transposed in the kernel, times fp32 weights: before, no state at
    # all (isa_dtype in every draw); the copy out of PSUM now writes the transpose in fp32
    # (and no DMA transpose, which casts nothing, takes its place).
    path = tmp_path / "wide_w.py"
    path.write_text(HEAD + WIDE_W.replace("XDTYPE", x))
    checked, failures = variant_failures(path, "wide_w")
    assert checked >= 2
    assert failures == []


SHARED = """
from kernelopt.ir import NKITensorTensor

def f_nkigym(x, w, w_router):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt", scale=1 / 256, bias=1e-6)(data=ss)
    xnT = NKITranspose()(data=NKITensorScalar(op0="multiply", operand0=rs)(data=x))
    h = NKIMatmul()(stationary=xnT, moving=w)
    g = NKIMatmul()(stationary=xnT, moving=w_router)
    return NKITensorTensor(op="multiply")(data1=h, data2=NKIActivation(op="sigmoid")(data=g))

INPUT_SPECS = {"x": ((128, 256), "bfloat16"), "w": ((256, 256), "bfloat16"), "w_router": ((256, 256), "WDTYPE")}
"""


@pytest.mark.parametrize("router", ["float32", "float16"])
def test_one_tensor_read_beside_weights_of_two_dtypes_is_written_in_each(
    tmp_path: Path, router: str
) -> None:
    # One normed x times a bf16 w and an fp32 (or fp16) router: the normed rows were cast
    # for one matmul, then back for the other, and every draw broke isa_dtype.
    from kernelopt.ir import build_ir
    from kernelopt.workload import load_workload

    path = tmp_path / "shared.py"
    path.write_text(HEAD + SHARED.replace("WDTYPE", router))
    w = load_workload(path)
    ir = build_ir(w.f_nkigym, w.input_specs, name="shared")
    assert sum(op.kind == "transpose" for op in ir.operators) == 2
    assert _base_state_correct(path, "shared")


def test_the_roofline_counts_an_fp32_matmul_beside_a_bf16_one_at_its_own_rate() -> None:
    # Any fp32 matmul put every MAC at the fp32 rate: one fp32 router beside a bf16
    # projection had a roofline longer than TensorE's busy time, and read 100 %.
    from kernelopt.ir import NKIMatmul, NKITranspose
    from kernelopt.ir.mac import roofline_work
    from kernelopt.sim.roofline import PeakRates, roofline
    from kernelopt.sim.trn2 import Trn2Params

    def f(x, w, w_router):
        xT = NKITranspose()(data=x)
        h = NKIMatmul()(stationary=xT, moving=w)
        return NKIMatmul()(stationary=NKITranspose()(data=h), moving=w_router)

    specs = {
        "x": ((256, 512), "float32"),
        "w": ((512, 512), "bfloat16"),
        "w_router": ((512, 128), "float32"),
    }
    work = roofline_work(f, specs)
    rates = PeakRates.of(Trn2Params())
    bf16, fp32 = 256 * 512 * 512, 256 * 512 * 128  # h is bf16 (cast for w), then fp32
    assert (work.tensor_macs, work.fp32_macs) == (bf16 + fp32, fp32)
    want = (bf16 + fp32 * rates.fp32_matmul_divisor) / rates.tensor_macs_per_s
    assert roofline(work, rates).tensor_s == pytest.approx(want)
