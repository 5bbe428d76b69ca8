"""NKI constructs that public kernels use run unchanged, with their documented meaning."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

HEADER = """
import nki
import nki.isa as nisa
import nki.language as nl

"""


def _run(kernel_file, body: str, inputs: dict[str, np.ndarray], **kw):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs, **kw)


def test_positional_isa_calls_and_named_addressed_tiles(kernel_file, uniform):
    # The destination-first positional forms, name= and address= as real kernels write them.
    body = """
@nki.jit(platform_target="trn2")
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="out")
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf, name="t", address=(0, 4096))
    acc = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t[0:128, 0:64], x[0:128, 0:64])
    nisa.memset(acc[0:128, 0:64], 1.0)
    nisa.tensor_tensor(acc[0:128, 0:64], acc[0:128, 0:64], t[0:128, 0:64], op=nl.add)
    nisa.tensor_copy(t[:, :], acc[:, :])
    nisa.dma_copy(out[nl.ds(0, 128), :], t)
    return out
"""
    x = uniform((128, 64))
    run = _run(kernel_file, body, {"x": x})
    np.testing.assert_allclose(run.outputs, x + 1.0, rtol=1e-6)
    placed = [a for a in run.allocations if a.name == "t"]
    assert [a.address for a in placed] == [(0, 4096)]


def test_engine_choice_reaches_the_trace(kernel_file):
    body = """
@nki.jit
def k(x):
    a = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    b = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(a, 0.0)
    nisa.memset(b, 0.0, engine=nisa.engine.vector)
    nisa.tensor_copy(a, b, engine=nisa.scalar_engine)
    nisa.tensor_tensor(b, a, b, op=nl.add, engine=nisa.engine.gpsimd)
    nisa.dma_copy(x, b)
    return x
"""
    run = _run(kernel_file, body, {"x": np.zeros((128, 64), np.float32)})
    assert [(i.op, i.engine) for i in run.trace] == [
        ("memset", "gpsimd"),
        ("memset", "vector"),
        ("tensor_copy", "scalar"),
        ("tensor_tensor", "gpsimd"),
        ("dma_copy", "dma"),
    ]


def test_the_one_pass_bf16_mode_is_vector_engines_only(kernel_file):
    body = """
@nki.jit
def k(x):
    a = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    b = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(a, 1.0)
    nisa.tensor_tensor(b, a, a, op=nl.add)
    nisa.tensor_tensor(b, a, a, op=nl.add, engine=nisa.engine.gpsimd)
    return x
"""
    run = _run(kernel_file, body, {"x": np.zeros((1,), np.float32)})
    vector, gpsimd = (i for i in run.trace if i.op == "tensor_tensor")
    # bf16 add in SBUF: VectorE streams the pair once, GpSimd both inputs.
    assert (vector.engine, vector.inputs) == ("vector", 1)
    assert (gpsimd.engine, gpsimd.inputs) == ("gpsimd", 2)


def test_gpsimd_cannot_reach_psum(kernel_file):
    body = """
@nki.jit
def k(x):
    p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
    s = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(p, 0.0)
    nisa.tensor_copy(s, p, engine=nisa.engine.gpsimd)  # <-
    return x
"""
    path, line = kernel_file(HEADER + body)
    with pytest.raises(SimError, match="GpSimd cannot access PSUM") as err:
        run_kernel(path, {"x": np.zeros((1,), np.float32)})
    assert err.value.line == line


def test_dma_read_modify_write_accumulates(kernel_file, uniform):
    body = """
@nki.jit
def k(x, y):
    t = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    nisa.dma_copy(t, y, dst_rmw_op=nl.add, dge_mode=nisa.dge_mode.hwdge)
    out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, t)
    return out
"""
    x, y = uniform((64, 32), 1), uniform((64, 32), 2)
    np.testing.assert_allclose(_run(kernel_file, body, {"x": x, "y": y}).outputs, x + y, rtol=1e-6)


def test_dma_transpose_of_three_axes(kernel_file, uniform):
    body = """
@nki.jit
def k(x):
    t = nl.ndarray((8, 4, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_transpose(t, x, axes=(2, 1, 0))
    out = nl.ndarray((8, 4, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, t)
    return out
"""
    x = uniform((16, 4, 8))
    np.testing.assert_array_equal(_run(kernel_file, body, {"x": x}).outputs, x.transpose(2, 1, 0))


def test_matmul_with_is_transpose_keeps_the_data_type(kernel_file, uniform):
    body = """
@nki.jit
def k(x, eye):
    xs = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(xs, x)
    es = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(es, eye)
    p = nl.ndarray((64, 128), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_matmul(p, xs, es, is_transpose=True, is_moving_onezero=True)
    s = nl.ndarray((64, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(s, p)
    out = nl.ndarray((64, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(out, s)
    return out
"""
    x = uniform((128, 64))
    run = _run(kernel_file, body, {"x": x, "eye": np.eye(128, dtype=np.float32)})
    np.testing.assert_allclose(run.outputs, x.T, rtol=1e-6)


def test_vector_engine_transpose_of_a_small_tile(kernel_file, uniform):
    body = """
@nki.jit
def k(x):
    t = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    u = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.nc_transpose(u, t, engine=nisa.engine.vector)
    out = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, u)
    return out
"""
    x = uniform((32, 16))
    run = _run(kernel_file, body, {"x": x})
    np.testing.assert_array_equal(run.outputs, x.T)
    assert [i.engine for i in run.trace if i.op == "nc_transpose"] == ["vector"]


def test_activation_with_reduction_and_scalar_tensor_tensor(kernel_file, uniform):
    body = """
@nki.jit
def k(x, y):
    xs = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    ys = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(xs, x)
    nisa.dma_copy(ys, y)
    sq = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(sq, nl.square, xs, reduce_op=nl.add, reduce_res=total, scale=2.0)
    inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(inv, nl.rsqrt, total, bias=1.0, scale=0.5)
    res = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.scalar_tensor_tensor(res, xs, nl.multiply, inv, nl.add, ys)
    neg = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(neg, nl.maximum, res, axis=1, negate=True, keepdims=True)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, res)
    out2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out2, neg)
    return out, out2
"""
    x, y = uniform((128, 64), 1), uniform((128, 64), 2)
    run = _run(kernel_file, body, {"x": x, "y": y})
    total = ((2 * x) ** 2).sum(axis=1, keepdims=True)
    res = x * (1.0 / np.sqrt(0.5 * total + 1.0)) + y
    np.testing.assert_allclose(run.outputs[0], res, rtol=1e-5)
    np.testing.assert_allclose(run.outputs[1], -res.max(axis=1, keepdims=True), rtol=1e-5)


def test_par_dim_nc_version_and_unknown_engine_values(kernel_file):
    body = """
@nki.jit
def k(x):
    t = nl.ndarray((nl.par_dim(128), 4), dtype=nl.float32, buffer=nl.sbuf)
    assert nisa.get_nc_version() == nisa.nc_version.gen3
    nisa.memset(t, 0.0, engine=nisa.engine.unknown)
    nisa.memset(t, 0.0, engine="fast")  # <-
    return x
"""
    path, line = kernel_file(HEADER + body)
    with pytest.raises(SimError, match="engine must be a nisa.engine member") as err:
        run_kernel(path, {"x": np.zeros((1,), np.float32)})
    assert err.value.line == line


def test_on_chip_reshape_splits_a_free_axis(kernel_file):
    # attention_cte's probabilities: one [128, 512] SBUF block seen as [128, 4, 128]
    # and moved by one DMA transpose, each 128-column block transposed on its own.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((128, 4, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    blocks = nl.ndarray((128, 4, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=blocks, src=t.reshape((128, 4, 128)))
    nisa.dma_copy(dst=out, src=blocks)
    return out
"""
    x = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    got = _run(kernel_file, body, {"x": x}).outputs
    assert got.shape == (128, 4, 128)
    for i in range(4):
        # Hand-computed: block i of the output is columns [128 i, 128 i + 128) transposed,
        # so its element [a, c] is x[c, 128 i + a].
        assert got[5, i, 7] == x[7, 128 * i + 5]
        np.testing.assert_array_equal(got[:, i, :], x[:, 128 * i : 128 * (i + 1)].T)


def test_on_chip_reshape_refuses_what_is_not_a_split(kernel_file):
    body = """
@nki.jit
def k(x):
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = t.reshape(({shape}))
    nisa.dma_copy(dst=x, src=t)
    return x
"""
    x = np.zeros((128, 512), np.float32)
    # Merging free axes is allowed (the nki.language.NkiTensor page, reshape); changing
    # the element count is not.
    for shape, words in (("64, 2, 512", "partition axis"), ("128, 3, 100", "cannot become")):
        with pytest.raises(SimError, match=words):
            _run(kernel_file, body.replace("{shape}", shape), {"x": x})


@pytest.mark.parametrize("keepdims", [False, True])
def test_a_row_reduction_lands_in_a_column_with_or_without_keepdims(kernel_file, keepdims):
    """A [P, 1] destination holds the same values per partition as a [P] one; the public
    tutorials write one without keepdims=True."""
    body = f"""
@nki.jit
def k(x):
    t = nl.ndarray((4, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    m = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(m, nl.maximum, t, axis=(1,), keepdims={keepdims})
    out = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, m)
    return out
"""
    x = np.array([[1, 7, 3], [-2, -5, -1], [0, 0, 4], [9, 8, 7]], np.float32)
    run = _run(kernel_file, body, {"x": x})
    np.testing.assert_array_equal(run.outputs, [[7], [-1], [4], [9]])


def test_a_row_reduction_into_a_wrong_shape_says_which(kernel_file):
    body = """
@nki.jit
def k(x):
    t = nl.ndarray((4, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    m = nl.ndarray((4, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(m, nl.maximum, t, axis=(1,))
    return x
"""
    path, _ = kernel_file(HEADER + body)
    with pytest.raises(SimError, match=r"shape mismatch: dst \(4, 2\), expected \(4,\)"):
        run_kernel(path, {"x": np.zeros((4, 3), np.float32)})


@pytest.mark.parametrize("axis", ["1", "2", "(2,)"])
def test_tensor_reduce_of_a_3d_tile_reduces_its_innermost_axis_in_either_numbering(
    kernel_file, axis
):
    """The Trn2/Trn3 page numbers the reduction axes as numpy (axis=2 is the last of a
    3-D tile), the earlier page from the most minor (axis=1); public kernels write both."""
    body = f"""
@nki.jit
def k(x):
    t = nl.ndarray((2, 3, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    s = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(s, nl.add, t, axis={axis})
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, s)
    return out
"""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    run = _run(kernel_file, body, {"x": x})
    np.testing.assert_array_equal(run.outputs, x.sum(axis=2))


def test_tensor_reduce_over_both_free_axes_of_a_3d_tile(kernel_file):
    body = """
@nki.jit
def k(x):
    t = nl.ndarray((2, 3, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(t, x)
    s = nl.ndarray((2, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(s, nl.add, t, axis=(1, 2), keepdims=True)
    out = nl.ndarray((2, 1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, s)
    return out
"""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    run = _run(kernel_file, body, {"x": x})
    np.testing.assert_array_equal(run.outputs, x.sum(axis=(1, 2), keepdims=True))


@pytest.mark.parametrize(
    ("role", "dtype", "refused"),
    [
        ("scale", "nl.bfloat16", True),
        ("scale", "nl.float32", False),
        ("bias", "nl.bfloat16", False),
        ("bias", "nl.float32", False),
    ],
)
def test_an_activation_scale_vector_must_be_float32_a_bias_vector_need_not(
    kernel_file, uniform, role: str, dtype: str, refused: bool
) -> None:
    # NKI API errors: err_activation_scale_invalid_type (a scale vector is float32),
    # err_activation_bias_invalid_type (a bias vector is float32, float16 or bfloat16).
    body = f"""
@nki.jit
def k(x, c):
    xs = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(xs, x)
    c32 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(c32, c)
    cs = nl.ndarray((128, 1), dtype={dtype}, buffer=nl.sbuf)
    nisa.tensor_copy(cs, c32)
    res = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(res, nl.copy, xs, {role}=cs)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(out, res)
    return out
"""
    x, c = uniform((128, 64), 1), uniform((128, 1), 2)
    if refused:
        with pytest.raises(SimError, match=f"a {role} vector must be float32, got bfloat16"):
            _run(kernel_file, body, {"x": x, "c": c})
        return
    run = _run(kernel_file, body, {"x": x, "c": c})
    want = x * c if role == "scale" else x + c
    np.testing.assert_allclose(run.outputs, want, rtol=1e-2)  # a bf16 bias, rounded or not
