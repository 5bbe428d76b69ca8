"""build_ir: tracing, unified dimensions, buffers, operators, repr; ops as numpy math."""

from __future__ import annotations

import random

import numpy as np
import pytest
from ir_support import SHIPPED, SMALL_SPECS, small_workload

from kernelopt.ir import (
    IRBuildError,
    NKIActivation,
    NKIMatmul,
    NKITensorReduce,
    NKITensorScalar,
    NKITensorTensor,
    NKITranspose,
    OpError,
    build_ir,
    compute_mac_count,
    render_ir,
    sample,
)
from kernelopt.workload import make_inputs


def test_every_shipped_workload_has_a_small_size() -> None:
    assert SHIPPED and set(SHIPPED) == set(SMALL_SPECS)


@pytest.mark.parametrize("name", SHIPPED)
def test_f_nkigym_on_arrays_is_f_numpy(name: str) -> None:
    w = small_workload(name)
    inputs = {k: v.astype(np.float32) for k, v in make_inputs(w.input_specs, seed=3).items()}
    got = w.f_nkigym(**inputs)
    np.testing.assert_allclose(got, w.f_numpy(**inputs), rtol=1e-5, atol=1e-5)


def test_matmul_dims_unify_k_and_carry_tile_limits(matmul_ir) -> None:
    dims = {d.name: (d.size, d.tile, d.num_tiles, d.reducing) for d in matmul_ir.dims}
    assert dims == {
        "d0": (256, 128, 2, True),  # K: contraction, partition limit
        "d1": (256, 128, 2, False),  # M: stationary free limit 128
        "d2": (1024, 512, 2, False),  # N: moving free limit 512
    }


def test_matmul_buffers_and_operators(matmul_ir) -> None:
    buffers = {
        b.name: (b.memory, b.axes, b.lifetime_dims, b.pinned_full) for b in matmul_ir.buffers
    }
    assert buffers == {
        "sbuf_lhsT": ("sbuf", ("d0", "d1"), (), ()),
        "sbuf_rhs": ("sbuf", ("d0", "d2"), (), ()),
        "psum_out": ("psum", ("d1", "d2"), ("d0",), ()),
        "sbuf_out": ("sbuf", ("d1", "d2"), (), ("d0",)),
    }
    assert [op.kind for op in matmul_ir.operators] == ["load", "load", "matmul", "drain", "store"]
    assert matmul_ir.buffer["psum_out"].dtype == "float32"


def test_repr_names_dims_buffers_operators_and_knobs(lhs_rhs_ir) -> None:
    text = repr(lhs_rhs_ir)
    for section in (
        "dimensions:",
        "physical_buffers:",
        "operators:",
        "loop_order:",
        "buffer_scopes:",
    ):
        assert section in text
    for name in (
        "d0",
        "d1",
        "d2",
        "sbuf_lhs",
        "psum_lhs_T",
        "sbuf_lhs_T",
        "psum_out",
        "transpose_lhs_T",
    ):
        assert name in text
    assert "variant: base" in text


def test_mac_count_counts_matmuls_only() -> None:
    w = small_workload("matmul_lhs_rhs")
    assert compute_mac_count(w.f_nkigym, w.input_specs) == 256 * 256 * 1024
    g = small_workload("matmul_gelu")
    assert compute_mac_count(g.f_nkigym, g.input_specs) == 256 * 256 * 1024


def test_parameters_must_match_input_specs() -> None:
    def f(a, b):
        return NKIMatmul()(stationary=a, moving=b)

    with pytest.raises(IRBuildError, match="do not match INPUT_SPECS"):
        build_ir(f, {"a": ((128, 128), "bfloat16")})


def test_mismatched_contraction_sizes_are_reported() -> None:
    def f(a, b):
        return NKIMatmul()(stationary=a, moving=b)

    specs = {"a": ((256, 128), "bfloat16"), "b": ((128, 512), "bfloat16")}
    with pytest.raises(IRBuildError, match="axis sizes 256 and 128 differ") as raised:
        build_ir(f, specs)
    # Which operand axes had to agree, by name and shape.
    assert "stationary 'a' (256, 128) axis 0 and moving 'b' (128, 512) axis 0" in str(raised.value)


def test_a_matmul_that_keeps_its_contraction_axis_is_refused_by_name() -> None:
    def f(x, w):
        h = NKIMatmul()(stationary=NKITranspose()(data=x), moving=w)
        return NKITensorTensor(op="add")(data1=x, data2=h)  # x + x @ w ties N to K

    specs = {"x": ((256, 256), "bfloat16"), "w": ((256, 256), "bfloat16")}
    with pytest.raises(IRBuildError, match="NKIMatmul producing 'h': its contraction axis K"):
        build_ir(f, specs)


def test_tensor_tensor_of_two_shapes_names_both_and_the_column_operands() -> None:
    def f(x, g):
        return NKITensorTensor(op="multiply")(data1=x, data2=g)

    specs = {"x": ((256, 512), "bfloat16"), "g": ((1, 512), "bfloat16")}
    with pytest.raises(IRBuildError, match=r"data1 \(256, 512\) and data2 \(1, 512\) differ"):
        build_ir(f, specs)
    # A [1, F] row, as an rms norm's gamma is often given: the message shows the column form.
    with pytest.raises(IRBuildError, match=r"give it as a \[F, 1\] column.*NKITranspose"):
        build_ir(f, specs)
    with pytest.raises(IRBuildError) as err:  # not said of two full tiles of other shapes
        build_ir(f, {"x": ((256, 512), "bfloat16"), "g": ((256, 256), "bfloat16")})
    assert "gamma" not in str(err.value)


def test_a_tensor_indexed_twice_by_one_dim_is_refused() -> None:
    # x.T @ x and x + x.T built, and every sampled state rendered a wrong kernel: the
    # result's rows and columns were one dim, looped over once.
    def gram(x):
        return NKIMatmul()(stationary=x, moving=x)

    def symmetric(x):
        return NKITensorTensor(op="add")(data1=x, data2=NKITranspose()(data=x))

    specs = {"x": ((256, 256), "bfloat16")}
    with pytest.raises(IRBuildError, match=r"NKIMatmul \(call 1 in f_nkigym\) result .* same dim"):
        build_ir(gram, specs)
    with pytest.raises(IRBuildError, match=r"input 'x' \(256, 256\): its rows and columns"):
        build_ir(symmetric, specs)


def test_a_parameter_assigned_a_result_builds() -> None:
    # w = silu(w) named the activation's buffer sbuf_w, the load's name: the build
    # stopped with "two buffers would be named 'sbuf_w'".
    def f(xT, w):
        w = NKIActivation(op="silu")(data=w)
        return NKIMatmul()(stationary=xT, moving=w)

    ir = build_ir(f, {"xT": ((256, 128), "bfloat16"), "w": ((256, 512), "bfloat16")})
    names = [b.name for b in ir.buffers]
    assert "sbuf_w" in names and len(set(names)) == len(names)
    assert ir.producers["sbuf_w"].kind == "load"


def test_an_empty_dim_is_reported_by_name() -> None:
    def f(a):
        return NKIActivation(op="relu")(data=a)

    with pytest.raises(IRBuildError, match=r"INPUT_SPECS\['a'\]: every dim must be at least 1"):
        build_ir(f, {"a": ((0, 512), "bfloat16")})


def test_returning_an_input_is_rejected() -> None:
    def f(a):
        NKIActivation(op="relu")(data=a)
        return a

    with pytest.raises(IRBuildError, match="must return the result of an op"):
        build_ir(f, {"a": ((128, 512), "float32")})


def test_tensor_reduce_pins_the_reduced_axis_of_its_operand() -> None:
    def f(a):
        e = NKIActivation(op="exp")(data=a)
        s = NKITensorReduce(op="add")(data=e)
        return s

    ir = build_ir(f, {"a": ((128, 1024), "float32")})
    sbuf_e = ir.buffer["sbuf_e"]
    # The reduction reads whole rows: the data buffer holds every d1 tile, off the knobs.
    assert sbuf_e.pinned_full == ("d1",) and sbuf_e.knob_dims == ("d0",)
    assert ir.output.shape == (128, 1) and ir.dim["d2"].size == 1
    assert ir.dim["d1"].reducing


def test_ops_reject_bad_attributes() -> None:
    with pytest.raises(OpError, match="not one of"):
        NKIActivation(op="softplus_typo")(data=np.ones((2, 2)))
    with pytest.raises(OpError, match="unknown attribute"):
        NKITranspose(op="add")
    with pytest.raises(OpError, match="operand0 must be a Python number"):
        NKITensorScalar(op0="multiply", operand0="2")(data=np.ones((2, 2)))
    with pytest.raises(OpError, match="free axes only"):
        NKITensorReduce(op="add", axis=0)(data=np.ones((2, 2)))
    with pytest.raises(OpError, match="free axes only"):
        NKITensorReduce(op="add", axis=[0, 1])(data=np.ones((2, 2)))


def test_a_reduction_axis_may_be_spelled_as_the_isa_takes_it() -> None:
    # nki.isa.tensor_reduce takes an int or a list of free axes.
    data = np.arange(6.0).reshape(2, 3)
    for axis in (1, -1, [1], (1,), [-1]):
        out = NKITensorReduce(op="maximum", axis=axis)(data=data)
        np.testing.assert_array_equal(out, [[2.0], [5.0]])


def test_a_tensor_scalar_op_without_its_operand_is_refused() -> None:
    # It computed x * 0 in numpy and rendered operand0=None, which the ISA refuses.
    with pytest.raises(OpError, match="op0='multiply' needs operand0="):
        NKITensorScalar(op0="multiply")(data=np.ones((2, 2)))
    with pytest.raises(OpError, match="op1='add' needs operand1="):
        NKITensorScalar(op0="multiply", operand0=2.0, op1="add")(data=np.ones((2, 2)))
    col = np.full((2, 1), 3.0)
    np.testing.assert_array_equal(
        NKITensorScalar(op0="multiply")(data=np.ones((2, 2)), operand0=col), np.full((2, 2), 3.0)
    )


def test_ops_numpy_semantics() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(NKITranspose()(data=a), a.T)
    np.testing.assert_array_equal(NKITensorTensor(op="subtract")(data1=a, data2=a * 2), -a)
    scaled = NKITensorScalar()(
        data=a, op0="subtract", operand0=1.0, reverse0=True, op1="multiply", operand1=2.0
    )
    np.testing.assert_array_equal(scaled, (1.0 - a) * 2.0)
    np.testing.assert_array_equal(NKITensorReduce(op="maximum")(data=a), [[2.0], [5.0]])
    np.testing.assert_allclose(
        NKIActivation(op="exp", scale=0.5)(data=a), np.exp(a * 0.5), rtol=1e-6
    )


def test_self_attention_from_one_input_names_the_shared_rows_and_what_to_give() -> None:
    # q and k projected from one x share x's rows: the scores' rows and columns are one
    # dim. The refusal named the last matmul's contraction and blamed an element-wise op.
    def f(x, wq, wk, wv):
        xt = NKITranspose()(data=x)
        q = NKIMatmul()(stationary=xt, moving=wq)
        k = NKIMatmul()(stationary=xt, moving=wk)
        v = NKIMatmul()(stationary=xt, moving=wv)
        s = NKIMatmul()(stationary=NKITranspose()(data=q), moving=NKITranspose()(data=k))
        return NKIMatmul()(stationary=NKITranspose()(data=s), moving=v)

    w = ((256, 128), "bfloat16")
    specs = {"x": ((128, 256), "bfloat16"), "wq": w, "wk": w, "wv": w}
    with pytest.raises(
        IRBuildError, match=r"result 's' \(128, 128\).*same dim \(x's rows.*as inputs"
    ):
        build_ir(f, specs)


def test_an_input_dtype_with_no_kernel_rendering_is_refused_at_build() -> None:
    # int8 built and showed, then every sampled state failed to render (KeyError 'int8').
    def f(x):
        return NKIActivation(op="relu")(data=x)

    with pytest.raises(IRBuildError, match=r"INPUT_SPECS\['x'\]: dtype 'int8' has no NKI"):
        build_ir(f, {"x": ((128, 256), "int8")})


def test_a_second_operand_without_op1_is_refused_not_dropped() -> None:
    # operand1= (or reverse1=) without op1= was accepted and ignored: x * 2, not x * 2 - 1.
    def f(x):
        return NKITensorScalar(op0="multiply", operand0=2.0, operand1=1.0, reverse1=True)(data=x)

    with pytest.raises(IRBuildError, match="operand1 and reverse1 given without op1="):
        build_ir(f, {"x": ((128, 256), "bfloat16")})


def _row_softmax(reduce_max: object, reduce_sum: object, divide: object):
    def f_nkigym(x):
        m = NKITensorReduce(op=reduce_max, axis=1)(data=x)
        e = NKIActivation(op="exp", bias=NKITensorScalar(op0="multiply", operand0=-1.0)(data=m))(
            data=x
        )
        s = NKITensorReduce(op=reduce_sum, axis=1)(data=e)
        return NKITensorScalar(op0=divide, operand0=s)(data=e)

    return f_nkigym


def test_operator_aliases_trace_to_the_canonical_operator() -> None:
    # op="max" (numpy's and nl's reduction name) used to be refused at build.
    specs = {"x": ((256, 512), "bfloat16")}
    canonical = build_ir(_row_softmax("maximum", "add", "divide"), specs, name="sm")
    rendered = render_ir(sample(canonical, random.Random(0)))
    assert "nl.maximum" in rendered
    for spelling in (("max", "sum", "div"), (np.max, np.sum, np.divide)):
        ir = build_ir(_row_softmax(*spelling), specs, name="sm")
        assert render_ir(sample(ir, random.Random(0))) == rendered
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    expected = np.exp(x - x.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    np.testing.assert_allclose(_row_softmax("max", "sum", "div")(x), expected, rtol=1e-6)
    with pytest.raises(OpError, match="not one of"):
        NKIActivation(op="max")(data=x)  # an alias only where its target is an operator


def test_operands_may_be_given_by_position_in_the_instructions_order() -> None:
    a = np.arange(12.0).reshape(3, 4)
    b = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(NKIMatmul()(a, b), a.T @ b)  # stationary, moving
    np.testing.assert_array_equal(NKITensorTensor(op="subtract")(a, 2 * a), -a)
    np.testing.assert_array_equal(NKIActivation(op="square")(a), a * a)

    def f_nkigym(x, w):
        return NKIMatmul()(NKITranspose()(NKIActivation(op="square")(x)), w)

    def f_keywords(x, w):
        return NKIMatmul()(
            stationary=NKITranspose()(data=NKIActivation(op="square")(data=x)), moving=w
        )

    specs = {"x": ((256, 256), "bfloat16"), "w": ((256, 256), "bfloat16")}
    by_position = render_ir(sample(build_ir(f_nkigym, specs, name="k"), random.Random(1)))
    assert by_position == render_ir(sample(build_ir(f_keywords, specs, name="k"), random.Random(1)))
    with pytest.raises(OpError, match="got 2 positional"):
        NKIActivation(op="exp")(a, a)
    with pytest.raises(OpError, match="'data' given twice"):
        NKIActivation(op="exp")(a, data=a)


def test_attributes_may_be_given_by_position_in_their_order() -> None:
    """``NKITensorReduce("max", 1)`` is ``NKITensorReduce(op="max", axis=1)``, as a
    signature in ``attr_names`` order would take it; the same graph either way."""
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    rows = NKITensorReduce("max", 1, True, True)(x)  # op, axis, keepdims, negate
    np.testing.assert_array_equal(rows, -x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        NKITensorScalar("subtract", rows, True)(x), rows - x, rtol=1e-6
    )  # op0, operand0 (a column), reverse0: operand0 - data

    def f_nkigym(x, w):
        m = NKITensorReduce(np.max, 1, negate=True)(x)
        return NKIMatmul()(NKITranspose()(NKIActivation("exp", bias=m)(x)), w)

    def f_keywords(x, w):
        m = NKITensorReduce(op="maximum", axis=1, negate=True)(data=x)
        return NKIMatmul()(
            stationary=NKITranspose()(data=NKIActivation(op="exp", bias=m)(data=x)), moving=w
        )

    specs = {"x": ((256, 256), "bfloat16"), "w": ((256, 256), "bfloat16")}
    by_position = render_ir(sample(build_ir(f_nkigym, specs, name="k"), random.Random(2)))
    assert by_position == render_ir(sample(build_ir(f_keywords, specs, name="k"), random.Random(2)))
    with pytest.raises(OpError, match=r"operands go in the call: NKIMatmul\(...\)\(stationary"):
        NKIMatmul(x, x)
    with pytest.raises(OpError, match="'op' given twice"):
        NKIActivation("exp", op="exp")
