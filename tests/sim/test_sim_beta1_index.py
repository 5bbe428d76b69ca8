"""Beta-1 index expressions, masks and views, each against a hand-computed result."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def run(kernel_file, body: str, **inputs):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs)


def test_nested_ranges_read_a_contiguous_block_as_three_axes(kernel_file) -> None:
    # x[r, j, c] laid out (4, 2, 3); the tile [4, 6] takes j * 3 + c along its free axis.
    x = np.arange(4 * 2 * 3, dtype=np.float32).reshape(4, 2, 3)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((4, 6), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((4, 6), dtype=nl.float32, buffer=nl.sbuf)
    i_p = nl.arange(4)[:, None, None]
    t[i_p, 3 * nl.arange(2)[None, :, None] + nl.arange(3)[None, None, :]] = nl.load(
        x[i_p, nl.arange(2)[None, :, None], nl.arange(3)[None, None, :]])
    nl.store(out, value=t)
    return out
""",
        x=x,
    )
    assert np.array_equal(r.outputs, x.reshape(4, 6))
    # One DMA: the nested expression is one contiguous run, not six transfers.
    assert [i.op for i in r.trace] == ["dma_copy", "dma_copy"]


def test_an_integer_among_ranges_leaves_a_unit_axis(kernel_file) -> None:
    # v[i_p, 0] is a [P, 1] tile: usable as an activation bias column.
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[10.0, 0.0], [20.0, 0.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x, b):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    bias = nl.load(b)
    y = nisa.activation(op=nl.copy, data=nl.load(x), bias=bias[nl.arange(2)[:, None], 0])
    nl.store(out, value=y)
    return out
""",
        x=x,
        b=b,
    )
    assert r.outputs.tolist() == [[11.0, 12.0], [23.0, 24.0]]


def test_a_one_value_range_of_a_3d_grid_is_no_axis_of_the_tile(kernel_file) -> None:
    # ix, iw, iy = nl.mgrid[0:4, 0:1, 0:3] indexing 2-D tensors (as the rmsnorm tutorial
    # does): x[ix, iy] is (4, 3), so its row sums are axis=[1]; g[iw, iy] is (1, 3) and
    # broadcasts to (4, 3). Rows 2 and 3 lie past the 3-row tensor: masked on ix.
    x = np.arange(3 * 3, dtype=np.float32).reshape(3, 3)
    g = np.array([1.0, 10.0, 100.0], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x, g):
    out = nl.ndarray((3, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    ix, iw, iy = nl.mgrid[0:4, 0:1, 0:3]
    gt = nl.load(g.reshape((1, 3))[iw, iy])
    t = nl.load(x[ix, iy], mask=(ix < 3))
    s = nl.sum(t, axis=[1])
    y = nl.multiply(nl.multiply(t, s), gt.broadcast_to((4, 3)))
    nl.store(out[ix, iy], value=y, mask=(ix < 3))
    return out
""",
        x=x,
        g=g,
    )
    # row sums 3, 12, 21; each element times its row sum, then by g's column.
    expected = [[0.0, 30.0, 600.0], [36.0, 480.0, 6000.0], [126.0, 1470.0, 16800.0]]
    assert r.outputs.tolist() == expected


def test_a_2d_grid_keeps_its_unit_range_as_a_column(kernel_file) -> None:
    # nl.mgrid[0:2, 0:1] indexes a [P, 1] column: usable as an activation bias.
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[10.0, 0.0], [20.0, 0.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x, b):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_c = nl.mgrid[0:2, 0:1]
    y = nisa.activation(op=nl.copy, data=nl.load(x), bias=nl.load(b[i_p, i_c]))
    nl.store(out, value=y)
    return out
""",
        x=x,
        b=b,
    )
    assert r.outputs.tolist() == [[11.0, 12.0], [23.0, 24.0]]


def test_a_4d_grid_names_its_axes_p_x_y_z(kernel_file) -> None:
    # w = nl.mgrid[0:2, 0:2, 0:2, 0:3]; t[w.p, 2 * w.x + w.y, w.z] is the (2, 2, 2, 3)
    # window view t[p, 2a + b, c]. With t[p, r, c] = 24p + 6r + c, each window's max
    # (r = 2a + 1, c = 2) is 24p + 12a + 8.
    t = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    r = run(
        kernel_file,
        """
@nki.jit
def k(t):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(t)
    w = nl.mgrid[0:2, 0:2, 0:2, 0:3]
    win = nl.copy(x[w.p, 2 * w.x + w.y, w.z])
    nl.store(out, value=nl.max(win, axis=[2, 3]))
    return out
""",
        t=t,
    )
    assert r.outputs.tolist() == [[8.0, 20.0], [32.0, 44.0]]


def test_finfo_and_the_narrow_integer_dtypes(kernel_file) -> None:
    # nl.finfo(nl.bfloat16).min is -(2 - 2**-7) * 2**127; an nl.uint8 comparison holds 0/1.
    x = np.array([[1.0, -5.0], [7.0, 2.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    lowest = nl.full((2, 2), dtype=nl.float32, fill_value=nl.finfo(nl.bfloat16).min)
    t = nl.load(x)
    nl.store(out[:, 0:2], value=lowest)
    nl.store(out[:, 2:4], value=nl.equal(nl.maximum(t, 0.0), t, dtype=nl.uint8))
    return out
""",
        x=x,
    )
    low = -(2 - 2**-7) * 2.0**127
    assert r.outputs[:, :2].tolist() == [[low, low], [low, low]]
    assert r.outputs[:, 2:].tolist() == [[1.0, 0.0], [1.0, 1.0]]


FLAT_BOUND = """
@nki.jit
def k(a, b, n):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.mgrid[0:2, 0:3]
    for i in nl.affine_range(2):
        offset = i * 6 + 3 * ix + iy
        t = nl.add(nl.load(a[i, ix, iy], mask=offset < n), nl.load(b[i, ix, iy]),
                   mask=offset < n)
        nl.store(out[i, ix, iy], value=t, mask=offset < n)
    return out
"""


def test_a_flat_bound_over_two_ranges_that_holds_on_the_tile_cuts_nothing(kernel_file) -> None:
    # offset = 6 i + 3 ix + iy < 12 holds on every element of both (2, 3) tiles.
    a = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    path, _ = kernel_file(HEADER + FLAT_BOUND)
    r = run_kernel(path, {"a": a, "b": np.full_like(a, 100.0)}, kernel_kwargs={"n": 12})
    assert r.outputs.tolist() == (a + 100.0).tolist()


def test_a_flat_bound_false_on_part_of_a_tile_is_refused(kernel_file) -> None:
    a = np.zeros((2, 2, 3), np.float32)
    path, _ = kernel_file(HEADER + FLAT_BOUND)
    with pytest.raises(SimError, match="false on part of"):
        run_kernel(path, {"a": a, "b": a}, kernel_kwargs={"n": 10})


def test_masks_with_negative_coefficients_keep_the_valid_rows(kernel_file) -> None:
    # -1 * i_p + (4 - 1 - 3 t) >= 0 keeps rows t*3 + i_p <= 3 of a 4-row tensor.
    x = np.arange(4 * 2, dtype=np.float32).reshape(4, 2)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((4, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(3)[:, None]
    i_f = nl.arange(2)[None, :]
    for t in nl.affine_range(2):
        keep = -3 * t + -1 * i_p + 3 >= 0
        tile = nl.load(x[3 * t + i_p, i_f], mask=keep)
        nl.store(out[3 * t + i_p, i_f], value=nl.add(tile, 1.0, mask=keep), mask=keep)
    return out
""",
        x=x,
    )
    assert np.array_equal(r.outputs, x + 1)
    assert [i.partitions for i in r.trace if i.op == "dma_copy" and i.hbm_read] == [3, 1]


def test_a_predicate_over_two_ranges_selects_but_does_not_clip(kernel_file) -> None:
    x = np.ones((3, 3), np.float32)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((3, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    i_q, i_k = nl.mgrid[0:3, 0:3]
    t = nl.load(x)
    y = nisa.affine_select(pred=(i_q - i_k >= 0), on_true_tile=t, on_false_value=-9.0)
    nl.store(out, value=y)
    return out
"""
    r = run(kernel_file, body, x=x)
    # Causal: row q keeps columns k <= q.
    assert r.outputs.tolist() == [[1, -9, -9], [1, 1, -9], [1, 1, 1]]
    assert [(i.op, i.engine) for i in r.trace if i.op == "affine_select"] == [
        ("affine_select", "gpsimd")
    ]
    path, _ = kernel_file(
        HEADER
        + body.replace(
            "y = nisa.affine_select(pred=(i_q - i_k >= 0), on_true_tile=t, on_false_value=-9.0)",
            "y = nl.add(t, 1.0, mask=(i_q - i_k >= 0))",
        ),
        name="clip.py",
    )
    with pytest.raises(SimError, match="several index ranges"):
        run_kernel(path, {"x": x})
    path, _ = kernel_file(
        HEADER + body.replace("pred=(i_q - i_k >= 0)", "pred=True"),
        name="not_a_predicate.py",
    )
    with pytest.raises(SimError, match="affine_select: pred must be an nl.arange") as err:
        run_kernel(path, {"x": x})
    assert err.value.kind == "isa"


def test_a_one_axis_reduction_broadcasts_along_the_free_axis(kernel_file) -> None:
    # nl.max without keepdims gives [P]: subtracting it works row by row, even
    # when P equals the free size (numpy would line it up with the columns).
    x = np.array([[1.0, 3.0], [5.0, 2.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.subtract(t, nl.max(t, axis=1)))
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[-2.0, 0.0], [0.0, -3.0]]


def test_reductions_and_numpy_functions_name_isa_operators(kernel_file) -> None:
    x = np.array([[1.0, 7.0, 2.0], [4.0, 0.0, -1.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.sbuf)
    r[:, 0] = nisa.tensor_reduce(nl.max, data=t, axis=[1])
    for i in nl.sequential_range(2, directives=None):
        acc = nl.loop_reduce(nisa.tensor_reduce(np.add, data=t, axis=[1], keepdims=True),
                             op=np.max, loop_indices=[i])
    r[:, 1:2] = acc
    nl.store(out, value=r)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[7.0, 10.0], [4.0, 3.0]]


def test_device_print_shows_the_values(kernel_file, capsys) -> None:
    run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.device_print("tile:", t)
    nl.store(out, value=t)
    return out
""",
        x=np.array([[3.0, 4.0]], np.float32),
    )
    assert "tile: [[3. 4.]]" in capsys.readouterr().out


def test_a_permuted_access_pattern_transposes_within_each_partition(kernel_file) -> None:
    # Each row holds a row-major 2 x 3 matrix; writing it through out[i_p, i_c * 2 + i_r]
    # while reading in[i_p, i_r * 3 + i_c] stores its transpose, row by row.
    x = np.arange(2 * 6, dtype=np.float32).reshape(2, 6)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 6), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    i_p = nl.arange(2)[:, None, None]
    i_r = nl.arange(2)[None, :, None]
    i_c = nl.arange(3)[None, None, :]
    flipped = nl.ndarray((2, 6), dtype=nl.float32, buffer=nl.sbuf)
    flipped[i_p, i_c * 2 + i_r] = nl.copy(t[i_p, i_r * 3 + i_c])
    nl.store(out, value=flipped)
    return out
""",
        x=x,
    )
    assert np.array_equal(r.outputs, x.reshape(2, 2, 3).transpose(0, 2, 1).reshape(2, 6))
    # Its write steps 8 bytes at a time (2 fp32): within the 16-byte full-rate limit.
    copy = next(i for i in r.trace if i.op == "activation")
    assert not copy.strided


def test_nested_ranges_reduce_pooling_windows(kernel_file) -> None:
    # 2 x 2 average pooling of a [1, 4, 4] image held as one partition.
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((1, 2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 4, 4), dtype=nl.float32, buffer=nl.sbuf)
    t[:, :, :] = nl.load(x)
    i0 = nl.arange(1)[:, None, None, None, None]
    i1 = nl.arange(2)[None, :, None, None, None]
    i2 = nl.arange(2)[None, None, :, None, None]
    i3 = nl.arange(2)[None, None, None, :, None]
    i4 = nl.arange(2)[None, None, None, None, :]
    pooled = nl.sum(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4]) / 4
    nl.store(out, value=pooled)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[[2.5, 4.5], [10.5, 12.5]]]


def test_a_strided_read_streams_at_half_rate(kernel_file) -> None:
    # Every fourth fp32 element: a 16-byte step streams at full rate, every eighth
    # (32 bytes) at half (NKI architecture guide, access patterns).
    x = np.linspace(-1, 1, 128 * 1024, dtype=np.float32).reshape(128, 1024)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    picked = nl.exp(t[nl.arange(128)[:, None], STEP * nl.arange(128)[None, :]])
    nl.store(out, value=picked)
    return out
"""
    costs = {}
    for step in (4, 8):
        path, _ = kernel_file(HEADER + body.replace("STEP", str(step)), name=f"k{step}.py")
        r = run_kernel(path, {"x": x})
        assert np.allclose(r.outputs, np.exp(x[:, ::step][:, :128]))
        act = next(i for i in r.trace if i.op == "activation")
        costs[step] = act.strided
    assert costs == {4: False, 8: True}


GARBAGE = """
@nki.jit
def k(x):
    out = nl.ndarray((ROWS, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:4]
    for t in nl.affine_range(2):
        valid = t * 128 + i_p < 200
        tile = nl.load(x[t * 128 + i_p, i_f], mask=valid)
        doubled = nl.multiply(tile, 2.0)          # all 128 rows, the last 56 never loaded
        nl.store(out[t * 128 + i_p, i_f], value=doubled, STORE_MASK)
    return out
"""


def test_reading_unwritten_rows_is_garbage_that_fails_only_when_stored(kernel_file) -> None:
    x = np.arange(200 * 4, dtype=np.float32).reshape(200, 4)
    path, _ = kernel_file(
        HEADER + GARBAGE.replace("ROWS", "200").replace("STORE_MASK", "mask=valid")
    )
    assert np.array_equal(run_kernel(path, {"x": x}).outputs, 2 * x)
    # Storing the garbage rows too: they hold NaN, never a silent number.
    path, _ = kernel_file(
        HEADER + GARBAGE.replace("ROWS", "256").replace(", STORE_MASK", ""), name="garbage.py"
    )
    stored = run_kernel(path, {"x": x}).outputs
    assert np.isnan(stored[200:]).all() and np.array_equal(stored[:200], 2 * x)


def test_loop_reduce_combines_into_each_destination(kernel_file) -> None:
    # Two destinations filled in an interleaved order: row r of acc is the max over
    # j of x[j, r] (the loop over j outside, the rows inside).
    x = np.array([[1.0, 9.0], [5.0, 2.0], [3.0, 7.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(3):
        row = nl.load(x[j : j + 1, :])
        for c in nl.affine_range(2):
            acc[0:1, c : c + 1] = nl.loop_reduce(row[0:1, c : c + 1], op=np.max, loop_indices=[j])
    nl.store(out, value=acc)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[5.0, 9.0]]


def test_an_index_tile_gathers_rows_indirectly(kernel_file) -> None:
    # Rows 6, 4, 2, 0 of x, picked by values held in SBUF (iota 6 - 2 p).
    x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((4, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    rows = nisa.iota(6 - 2 * nl.arange(4)[:, None], dtype=nl.int32)
    picked = nl.load(x[rows, nl.arange(3)[None, :]])
    nl.store(out, value=picked)
    return out
""",
        x=x,
    )
    assert np.array_equal(r.outputs, x[[6, 4, 2, 0]])
    gather = next(i for i in r.trace if i.op == "dma_copy" and i.hbm_read)
    iota = next(i for i in r.trace if i.op == "iota")
    # The DMA waits for the index tile and uses software descriptor generation.
    assert iota.writes[0] in gather.reads and gather.software_dge


POOL = """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i0 = nl.arange(2)[:, None, None, None, None]
    i1 = nl.arange(2)[None, :, None, None, None]
    i2 = nl.arange(2)[None, None, :, None, None]
    i3 = nl.arange(2)[None, None, None, :, None]
    i4 = nl.arange(2)[None, None, None, None, :]
    t = nl.load(x)
    r = nl.{op}(t[i0, 2 * i1 - 1 + i3, 2 * i2 - 1 + i4], axis=[3, 4],
               mask=(2 * i1 - 1 + i3 >= 0) & (2 * i2 - 1 + i4 >= 0))
    nl.store(out, value=r)
    return out
"""


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("max", [[[1.0, 3.0], [7.0, 9.0]], [[11.0, 13.0], [17.0, 19.0]]]),
        ("sum", [[[1.0, 5.0], [11.0, 28.0]], [[11.0, 25.0], [31.0, 68.0]]]),
    ],
)
def test_a_padding_predicate_drops_elements_out_of_a_reduction(kernel_file, op, expected) -> None:
    # 2 x 2 windows, stride 2, padding 1 over x[c] = [[1, 2, 3], [4, 5, 6], [7, 8, 9]] + 10c:
    # the window at (0, 0) keeps only x[c, 0, 0]; the padding reads as the identity.
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3) + 10 * np.arange(2)[:, None, None]
    path, _ = kernel_file(HEADER + POOL.replace("{op}", op))
    run = run_kernel(path, {"x": x.astype(np.float32)})
    assert run.outputs.tolist() == expected


def test_a_padding_predicate_that_keeps_elements_past_the_tensor_is_refused(kernel_file) -> None:
    # Without the lower bound on the rows, the window at row -1 is kept: refused.
    body = POOL.replace("{op}", "max").replace("(2 * i1 - 1 + i3 >= 0) & ", "")
    path, _ = kernel_file(HEADER + body)
    with pytest.raises(SimError, match="keeps elements past axis 1"):
        run_kernel(path, {"x": np.zeros((2, 3, 3), np.float32)})


def test_an_on_chip_tile_indexed_to_its_partitions_is_a_column(kernel_file) -> None:
    # l[:, 1] of a (2, 3) SBUF tile is a [2, 1] column (the flash-attention kernel
    # passes such a column on and indexes it [:, 0]); nl.fp32.min fills the rest.
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    col = t[:, 1]
    low = nl.full((2, 1), fill_value=nl.fp32.min, dtype=nl.float32)
    y = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.sbuf)
    y[:, 0:1] = nisa.activation(op=nl.copy, data=col[:, 0], bias=col)
    y[:, 1:2] = nl.maximum(low, col)
    nl.store(out, value=y)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[4.0, 2.0], [10.0, 5.0]]


TWO_GRIDS = """
@nki.jit
def k(x):
    out = nl.ndarray((2, 6), dtype=nl.float32, buffer=nl.shared_hbm)
    ip, iq = nl.mgrid[0:2, 0:6]
    jf, js = nl.mgrid[0:4, 0:3]
    for j in nl.affine_range(2):
        t = nl.load(x[ip, j * 4 + jf], mask=({mask}))
        nl.store(out[ip, j * 4 + jf], value=nl.multiply(t, 10.0), mask=({mask}))
    return out
"""


def test_ranges_of_two_grids_in_one_access_take_one_axis_each(kernel_file) -> None:
    # ip is the first range of one grid, jf the first of another: the access is
    # (2, 4), not a clash on axis 0; the mask on jf cuts the second chunk to 2 columns.
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    path, _ = kernel_file(HEADER + TWO_GRIDS.replace("{mask}", "j * 4 + jf < 6"))
    run = run_kernel(path, {"x": x})
    assert run.outputs.tolist() == (10 * x).tolist()


def test_a_mask_over_a_range_the_access_does_not_index_is_refused(kernel_file) -> None:
    # iq belongs to the first grid but this access never indexes it.
    path, _ = kernel_file(HEADER + TWO_GRIDS.replace("{mask}", "j * 4 + jf < 6) & (iq < 6"))
    with pytest.raises(SimError, match="does not index"):
        run_kernel(path, {"x": np.zeros((2, 6), np.float32)})
