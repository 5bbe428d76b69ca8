"""[P, 1] column operands (tensor_scalar operands, activation bias/scale), reciprocal,
negated reductions and the FusedDrain rewrite: numerics, validity both ways, rendering."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from ir_support import IR_DIR, small_ir

from kernelopt.ir import (
    IRBuildError,
    NKIActivation,
    NKIReciprocal,
    NKITensorReduce,
    NKITensorScalar,
    OpError,
    apply_fix,
    build_ir,
    render_ir,
    sample,
    validity_report,
)
from kernelopt.ir.derive import derive
from kernelopt.ir.rewrites import FusedDrain
from kernelopt.ir.sample import draw
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

RNG = np.random.default_rng(0)


def test_tensor_scalar_column_operand_broadcasts_along_the_row() -> None:
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    col = RNG.standard_normal((4, 1)).astype(np.float32)
    out = NKITensorScalar(op0="multiply", operand0=col, op1="add", operand1=2.0)(data=x)
    np.testing.assert_allclose(out, x * col + 2.0, rtol=1e-6)
    rev = NKITensorScalar(op0="subtract", operand0=col, reverse0=True)(data=x)
    np.testing.assert_allclose(rev, col - x, rtol=1e-6)


def test_a_column_given_in_the_call_computes_the_same() -> None:
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    col = RNG.standard_normal((4, 1)).astype(np.float32)
    at_construction = NKITensorScalar(op0="add", operand0=col)(data=x)
    in_call = NKITensorScalar(op0="add")(data=x, operand0=col)
    np.testing.assert_array_equal(at_construction, in_call)


def test_activation_bias_and_scale_columns() -> None:
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    bias, scale = RNG.standard_normal((4, 1)), RNG.standard_normal((4, 1))
    out = NKIActivation(op="exp", bias=bias, scale=scale)(data=x)
    np.testing.assert_allclose(out, np.exp(x * scale + bias), rtol=1e-5)
    np.testing.assert_allclose(NKIActivation(op="exp", scale=0.5)(data=x), np.exp(x * 0.5), 1e-5)


def test_reciprocal_and_negated_reduce() -> None:
    x = RNG.uniform(0.5, 2.0, (4, 6)).astype(np.float32)
    np.testing.assert_allclose(NKIReciprocal()(data=x), 1.0 / x, rtol=1e-6)
    neg = NKITensorReduce(op="maximum", axis=1, negate=True)(data=x)
    np.testing.assert_allclose(neg, -x.max(axis=1, keepdims=True))


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (lambda x: NKITensorScalar(op0="add", operand0=np.ones((4, 2)))(data=x), "[4, 1] column"),
        (lambda x: NKITensorScalar(op0="add", operand0="one")(data=x), "number or a [P, 1]"),
        (lambda x: NKIActivation(op="exp", bias=np.ones((3, 1)))(data=x), "[4, 1] column"),
    ],
)
def test_bad_operands_are_refused(op, message: str) -> None:
    with pytest.raises(OpError, match=message.replace("[", r"\[")):
        op(np.ones((4, 6), dtype=np.float32))


def _norm_graph(spelling: str):
    def f_nkigym(x):
        ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
        rs = NKIActivation(op="rsqrt")(
            data=NKITensorScalar(op0="multiply", operand0=1.0 / 256, op1="add", operand1=1e-6)(
                data=ss
            )
        )
        if spelling == "construction":
            out = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
        else:
            out = NKITensorScalar(op0="multiply")(data=x, operand0=rs)
        return out

    return f_nkigym


def test_both_spellings_trace_to_the_same_graph() -> None:
    specs = {"x": ((256, 256), "bfloat16")}
    a = build_ir(_norm_graph("construction"), specs, name="n")
    b = build_ir(_norm_graph("call"), specs, name="n")
    assert a.structure_key() == b.structure_key()
    column_user = a.operators[-2]
    assert column_user.attr("columns") == ("operand0",)
    assert a.buffer[column_user.srcs[1]].axes[0] == a.buffer[column_user.srcs[0]].axes[0]


def test_a_traced_column_must_have_one_element_per_partition() -> None:
    def f_nkigym(x, y):
        out = NKITensorScalar(op0="multiply", operand0=y)(data=x)
        return out

    with pytest.raises(IRBuildError, match=r"\[P, 1\] column"):
        build_ir(f_nkigym, {"x": ((128, 256), "float32"), "y": ((128, 2), "float32")})
    with pytest.raises(IRBuildError, match="axis sizes 128 and 256 differ"):
        build_ir(f_nkigym, {"x": ((128, 256), "float32"), "y": ((256, 1), "float32")})


def _states(ir, seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        yield draw(ir, rng)


def test_a_scale_used_before_its_row_reduction_finishes_is_invalid_with_a_fix() -> None:
    ir = build_ir(_norm_graph("construction"), {"x": ((256, 512), "bfloat16")}, name="n")
    (reader,) = [op.name for op in ir.operators if op.attr("columns")]
    for state in _states(ir, 3, 3000):
        early = [
            f
            for f in validity_report(state)
            if f.check == "operand_scope" and f"{reader} fires" in f.detail
        ]
        if early and early[0].fix is not None:
            break
    else:
        pytest.fail("no draw used the row scale inside the loop that completes it")
    assert "complete only after" in early[0].detail and early[0].fix_hint.startswith("set ")
    fixed = apply_fix(state, early[0].fix)
    still = [
        f
        for f in validity_report(fixed)
        if (f.check, f.buffer) == (early[0].check, early[0].buffer)
    ]
    assert not still


def test_valid_column_states_render_the_column_as_an_operand(tmp_path: Path) -> None:
    w = load_workload(IR_DIR / "rmsnorm_matmul" / "workload.py")
    specs = {"x": ((256, 512), "bfloat16"), "w": ((512, 512), "bfloat16")}
    for seed in range(3):
        ir = sample(build_ir(w.f_nkigym, specs, name="r"), random.Random(seed))
        assert validity_report(ir) == []
        text = render_ir(ir)
        assert "operand0=sbuf_rs[:, " in text and ", 0:1]" in text
        assert "nisa.tensor_reduce(" in text and "nisa.activation(" in text


SOFTMAX = """
import numpy as np

from kernelopt.ir import NKIActivation, NKIReciprocal, NKITensorReduce, NKITensorScalar


def f_nkigym(x):
    m = NKITensorReduce(op="maximum", axis=1, negate=True)(data=x)
    e = NKIActivation(op="exp", bias=m, scale=1.0)(data=x)
    r = NKIReciprocal()(data=NKITensorReduce(op="add", axis=1)(data=e))
    out = NKITensorScalar(op0="multiply")(data=e, operand0=r)
    return out


def f_numpy(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


INPUT_SPECS = {"x": ((256, 1024), "float32")}
"""


def _sampled_kernel_checked(tmp_path: Path, source: str, seed: int) -> str:
    """A state drawn for the workload in ``source``, rendered and checked correct on the
    simulator; the kernel's text."""
    path = tmp_path / "workload.py"
    path.write_text(source)
    w = load_workload(path)
    ir = sample(build_ir(w.f_nkigym, w.input_specs, name="k"), random.Random(seed))
    kernel = tmp_path / "kernel.py"
    kernel.write_text(render_ir(ir))
    report = check_kernel(kernel, w)
    assert report.correct, f"{report.error_kind}: {report.error}"
    return kernel.read_text()


@pytest.mark.parametrize("seed", range(3))
def test_softmax_columns_render_and_compute_f_numpy(tmp_path: Path, seed: int) -> None:
    text = _sampled_kernel_checked(tmp_path, SOFTMAX, seed)
    assert "negate=True" in text and "nisa.reciprocal(" in text and "bias=sbuf_m[" in text


def test_fused_drain_reads_psum_and_pins_the_reduction() -> None:
    gelu = small_ir("matmul_gelu")
    fused = FusedDrain().apply(gelu)
    assert fused.variant == "FusedDrain"
    assert "drain" not in {op.kind for op in fused.operators}
    act = next(op for op in fused.operators if op.kind == "activation")
    psum = fused.buffer[act.srcs[0]]
    assert psum.memory == "psum" and set(psum.lifetime_dims) <= set(psum.pinned_full)
    assert not derive(fused)[1]
    assert "data=psum_mm[" in render_ir(sample(fused, random.Random(2)))
    plain = small_ir("matmul")  # the drain feeds the store: nothing to fuse
    assert FusedDrain().apply(plain) is plain


def test_tensor_scalar_goes_to_scalar_engine_when_vector_engine_is_busier() -> None:
    from kernelopt.ir.render import engine_plan

    softmax = small_ir("softmax")  # two reductions on VectorE, one exp on ScalarE
    assert engine_plan(softmax) == {"tensor_scalar_out": "scalar"}
    assert "engine=nisa.engine.scalar" in render_ir(softmax)
    # A drain by copy may run on either engine: alone, it goes to the faster ScalarE.
    matmul = small_ir("matmul")
    assert engine_plan(matmul) == {"drain_out": "scalar"}
    assert "engine=nisa.engine.scalar" in render_ir(matmul)
    # A drain by add is a tensor_tensor: VectorE (or GpSimd) only, never planned.
    psum = matmul.buffer["psum_out"]
    k = psum.lifetime_dims[0]
    scopes = {
        **matmul.buffer_scopes,
        "psum_out": {**matmul.buffer_scopes["psum_out"], k: "PER_BLOCK"},
    }
    adds = matmul.with_knobs(buffer_scopes=scopes)
    assert validity_report(adds) == []
    assert engine_plan(adds) == {}
    assert "op=nl.add" in render_ir(adds) and "engine=" not in render_ir(adds)


def test_load_transpose_keeps_the_load_other_ops_read() -> None:
    from kernelopt.ir.rewrites import LoadTranspose

    ir = small_ir("rmsnorm_matmul")
    rewritten = LoadTranspose().apply(ir)
    kinds = [op.kind for op in rewritten.operators]
    assert kinds.count("load") == 2 and kinds.count("load_transpose") == 1
    assert "transpose" not in kinds and "sbuf_x" in rewritten.buffer
    assert "psum_xt" not in rewritten.buffer
    text = render_ir(sample(rewritten, random.Random(4)))
    assert "nisa.dma_transpose(" in text and "src=x[" in text


def test_sigmoid_and_silu_of_far_negative_values_are_zero_without_an_overflow() -> None:
    """The op classes evaluate f_numpy-style semantics; exp(-x) overflowed (and warned)
    for x below about -89 in fp32."""
    import warnings

    from kernelopt.ir import NKIActivation

    x = np.array([[-1000.0, -20.0, 0.0, 20.0]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sig = np.asarray(NKIActivation(op="sigmoid")(data=x), dtype=np.float64)
        silu = np.asarray(NKIActivation(op="silu")(data=x), dtype=np.float64)
    want = [0.0, 2.0611536e-09, 0.5, 1.0 - 2.0611536e-09]
    assert np.allclose(sig, [want], rtol=1e-5, atol=1e-12)
    assert np.allclose(silu, x * np.array([want]), rtol=1e-5, atol=1e-9)


# Every activation function beyond the first nine, against a reference written here.
_ACTIVATIONS = {
    "sqrt": np.sqrt,
    "log": np.log,
    "reciprocal": lambda x: 1.0 / x,
    "abs": np.abs,
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3))),
    "gelu_apprx_sigmoid": lambda x: x / (1 + np.exp(-1.702 * x)),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "erf": np.vectorize(__import__("math").erf),
    "sin": np.sin,
    "cos": np.cos,
    "arctan": np.arctan,
    "sign": np.sign,
}


@pytest.mark.parametrize("name", sorted(_ACTIVATIONS))
def test_each_activation_function_computes_its_definition(name: str) -> None:
    x = np.linspace(0.1, 3.0, 24, dtype=np.float32).reshape(2, 12)
    x[0] = -x[0] if name not in ("sqrt", "log") else x[0]
    got = np.asarray(NKIActivation(op=name, scale=0.5, bias=0.25)(data=x), dtype=np.float64)
    want = _ACTIVATIONS[name](x.astype(np.float64) * 0.5 + 0.25)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


RMS_SQRT = """
import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKIReciprocal, NKITensorReduce
from kernelopt.ir import NKITensorScalar, NKITranspose


def f_nkigym(x, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rms = NKIActivation(op="sqrt", scale=1.0 / 512, bias=1e-6)(data=ss)
    y = NKITensorScalar(op0="multiply", operand0=NKIReciprocal()(data=rms))(data=x)
    h = NKIActivation(op="gelu_apprx_tanh")(data=y)
    return NKIMatmul()(stationary=NKITranspose()(data=h), moving=w)


def f_numpy(x, w):
    y = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)
    h = 0.5 * y * (1 + np.tanh(0.7978845608 * (y + 0.044715 * y**3)))
    return h @ w


INPUT_SPECS = {"x": ((256, 512), "float32"), "w": ((512, 256), "float32")}
"""


@pytest.mark.parametrize("seed", range(2))
def test_an_rms_norm_written_with_sqrt_and_reciprocal_runs_correct(
    tmp_path: Path, seed: int
) -> None:
    text = _sampled_kernel_checked(tmp_path, RMS_SQRT, seed)
    assert "op=nl.sqrt" in text and "op=nl.gelu_apprx_tanh" in text


SCALED_COPY = """
import numpy as np
from kernelopt.ir import NKIActivation, NKITensorReduce


def f_nkigym(x):
    ss = NKITensorReduce(op="add", axis=1)(data=x)
    e = NKIActivation(op="exp")(data=NKIActivation(op="gelu")(data=x))
    return NKIActivation(op="copy", scale=ss)(data=e)


def f_numpy(x):
    return f_nkigym(x=np.asarray(x, dtype=np.float32))


INPUT_SPECS = {"x": ((256, 512), "float32")}
"""


@pytest.mark.parametrize("seed", range(2))
def test_an_activation_that_only_scales_runs_on_the_less_busy_engine(
    tmp_path: Path, seed: int
) -> None:
    """copy(data * scale) without a bias is tensor_scalar's multiply: with ScalarE holding
    the gelu and the exp and VectorE one row sum, it goes to VectorE, still correct."""
    from kernelopt.ir.engines import engine_plan
    from kernelopt.ir.mac import roofline_work

    text = _sampled_kernel_checked(tmp_path, SCALED_COPY, seed)
    assert "op=nl.copy" not in text
    assert "op0=nl.multiply" in text and "operand0=sbuf_ss[" in text
    w = load_workload(tmp_path / "workload.py")
    ir = build_ir(w.f_nkigym, w.input_specs, name="k")
    assert list(engine_plan(ir).values()) == ["vector"]
    # The roofline counts the copy as work either engine may take, the gelu and exp as
    # ScalarE's and the row sum as VectorE's.
    work = roofline_work(w.f_nkigym, w.input_specs)
    assert (work.vector_elements, work.scalar_elements, work.either_elements) == (
        256 * 512,
        2 * 256 * 512,
        256 * 512,
    )
