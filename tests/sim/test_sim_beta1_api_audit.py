"""The beta-1 calls the API audit added (public nki.language / nki.isa lists of Neuron
SDK 2.26.1): each runs in a small beta-1 kernel against values worked out by hand, and
one documented constraint of each is refused."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel
from kernelopt.sim.chips import chip_params

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def run(kernel_file, body: str, params=None, **inputs):
    path, _ = kernel_file(HEADER + body)
    if params is None:
        return run_kernel(path, inputs)
    return run_kernel(path, inputs, params=params)


# --- nki.language ----------------------------------------------------------------------


def test_tan_is_elementwise_tangent(kernel_file) -> None:
    x = np.array([[0.0, 0.5], [-0.25, 1.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.tan(nl.load(x)))
    return out
""",
        x=x,
    )
    np.testing.assert_allclose(r.outputs, np.tan(x.astype(np.float64)), rtol=1e-6)
    assert any(i.op == "activation" for i in r.trace)


def test_all_is_true_where_no_element_is_zero(kernel_file) -> None:
    # Row 0 holds a zero, row 1 none, row 2 only negatives (non-zero, so true).
    x = np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 5.0], [-1.0, -2.0, -3.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((3, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.all(nl.load(x), axis=1, dtype=nl.float32)
    nl.store(out, value=a)
    return out
""",
        x=x,
    )
    assert r.outputs.reshape(-1).tolist() == [0.0, 1.0, 1.0]


def test_rms_norm_divides_by_the_root_mean_square_and_scales(kernel_file) -> None:
    # Row [3, 4, 0, 0]: sum of squares 25, over n = 4 -> 6.25 (+1e-6); RMS ~2.5.
    x = np.array([[3.0, 4.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]], np.float32)
    w = np.array([[1.0, 2.0, 1.0, 1.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x, w):
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    y = nl.rms_norm(nl.load(x), nl.load(w), axis=1, n=4)
    nl.store(out, value=y)
    return out
""",
        x=x,
        w=w,
    )
    rms = np.sqrt(np.array([[6.25], [1.0]]) + 1e-6)
    np.testing.assert_allclose(r.outputs, x / rms * w, rtol=1e-6)
    np.testing.assert_allclose(r.outputs[0], [1.2, 3.2, 0.0, 0.0], rtol=1e-5)


def test_static_cast_and_bfp16_min_are_trace_time_constants(kernel_file) -> None:
    x = np.array([[1.0, 2.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((1, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    three = nl.static_cast(3.9, nl.int32)
    nl.store(out[:, 0:2], value=nl.multiply(nl.load(x), three))
    nl.store(out[:, 2:3], value=nl.full((1, 1), nl.bfp16.min, dtype=nl.float32))
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[3.0, 6.0, -np.inf]]


def test_static_cast_refuses_a_tile(kernel_file) -> None:
    with pytest.raises(SimError, match="static_cast"):
        run(
            kernel_file,
            """
@nki.jit
def k(x):
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.static_cast(nl.load(x), nl.int32))
    return out
""",
            x=np.zeros((1, 2), np.float32),
        )


GATHER = """
@nki.jit
def k(data, idx):
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    g = nl.gather_flattened(nl.load(data), nl.load(idx))
    nl.store(out, value=g)
    return out
"""


def test_gather_flattened_picks_within_each_partition_on_gpsimd(kernel_file) -> None:
    data = np.array([[10, 11, 12, 13], [20, 21, 22, 23]], np.float32)
    idx = np.array([[3, 0, 3], [1, 1, 2]], np.uint32)
    r = run(kernel_file, GATHER, data=data, idx=idx)
    assert r.outputs.tolist() == [[13.0, 10.0, 13.0], [21.0, 21.0, 22.0]]
    gather = next(i for i in r.trace if i.op == "gather_flattened")
    assert gather.engine == "gpsimd"


def test_gather_flattened_needs_uint32_indices(kernel_file) -> None:
    data = np.zeros((2, 4), np.float32)
    with pytest.raises(SimError, match="uint32"):
        run(kernel_file, GATHER, data=data, idx=np.zeros((2, 3), np.float32))


ATOMIC = """
@nki.jit
def k(table, idx, value):
    out = nl.ndarray((4, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(table))
    ix = nl.arange(3)[None, :]
    nl.atomic_rmw(out[nl.load(idx), ix], value=nl.load(value), op=OP)
    return out
"""


def test_atomic_rmw_adds_every_update_to_a_shared_row(kernel_file) -> None:
    # Partitions 0 and 2 both index row 1: 1 + 4 land there; partition 1 adds 2 to row 3.
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx = np.array([[1], [3], [1]], np.int32)
    value = np.array([[1.0] * 3, [2.0] * 3, [4.0] * 3], np.float32)
    r = run(kernel_file, ATOMIC.replace("OP", "np.add"), table=table, idx=idx, value=value)
    want = table.copy()
    want[1] += 5.0
    want[3] += 2.0
    assert r.outputs.tolist() == want.tolist()
    assert any(i.engine == "dma" and i.op == "dma_copy" for i in r.trace)


def test_atomic_rmw_supports_only_add(kernel_file) -> None:
    inputs = {
        "table": np.zeros((4, 3), np.float32),
        "idx": np.array([[0], [1], [2]], np.int32),
        "value": np.ones((3, 3), np.float32),
    }
    with pytest.raises(SimError, match="only np.add"):
        run(kernel_file, ATOMIC.replace("OP", "np.multiply"), **inputs)


# --- nki.isa -----------------------------------------------------------------------------

SELECT = """
@nki.jit
def k(pred, x):
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    dst = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((2, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.select_reduce(dst=dst, predicate=nl.load(pred), on_true=nl.load(x), on_false=-1.0,
                       reduce_res=res, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nl.store(out[:, 0:3], value=dst)
    nl.store(out[:, 3:4], value=res)
    return out
"""


def test_select_reduce_selects_and_keeps_the_row_max(kernel_file) -> None:
    pred = np.array([[1, 0, 1], [0, 0, 1]], np.uint8)
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)
    r = run(kernel_file, SELECT, pred=pred, x=x)
    assert r.outputs.tolist() == [[1.0, -1.0, 3.0, 3.0], [-1.0, -1.0, -6.0, -1.0]]
    ins = next(i for i in r.trace if i.op == "select_reduce")
    assert ins.engine == "vector"


def test_select_reduce_needs_an_integer_predicate(kernel_file) -> None:
    pred = np.ones((2, 3), np.float32)
    with pytest.raises(SimError, match="predicate must be"):
        run(kernel_file, SELECT, pred=pred, x=np.zeros((2, 3), np.float32))


RANGE = """
@nki.jit
def k(x, lo, hi):
    out = nl.ndarray((2, 6), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.ndarray((2, 1), dtype=nl.float32, buffer=nl.sbuf)
    y = nisa.range_select(on_true_tile=nl.load(x), comp_op0=nl.greater_equal,
                          comp_op1=nl.less, bound0=nl.load(lo), bound1=nl.load(hi),
                          reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=res,
                          reduce_op=np.max, range_start=1, on_false_value=-9.0)
    nl.store(out[:, 0:5], value=y)
    nl.store(out[:, 5:6], value=res)
    return out
"""


def test_range_select_keeps_the_indices_between_the_bounds(kernel_file) -> None:
    # range_start 1: element j is compared as j + 1. Row 0 keeps 2 <= j+1 < 4 (j = 1, 2);
    # row 1 keeps 3 <= j+1 < 6 (j = 2, 3, 4).
    x = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]], np.float32)
    lo = np.array([[2.0], [3.0]], np.float32)
    hi = np.array([[4.0], [6.0]], np.float32)
    r = run(kernel_file, RANGE, x=x, lo=lo, hi=hi)
    assert r.outputs.tolist() == [
        [-9.0, 2.0, 3.0, -9.0, -9.0, 3.0],
        [-9.0, -9.0, 8.0, 9.0, 10.0, 10.0],
    ]


def test_range_select_is_not_on_neuroncore_v2(kernel_file) -> None:
    inputs = {
        "x": np.zeros((2, 5), np.float32),
        "lo": np.zeros((2, 1), np.float32),
        "hi": np.ones((2, 1), np.float32),
    }
    with pytest.raises(SimError, match="NeuronCore-v3"):
        run(kernel_file, RANGE, params=chip_params("trn1"), **inputs)


MATCH = """
@nki.jit
def k(data, vals):
    out = nl.ndarray((1, 11), dtype=nl.float32, buffer=nl.shared_hbm)
    where = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    idx = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.sbuf)
    y = nisa.nc_match_replace8(data=nl.load(data), vals=nl.load(vals), imm=-1.0, dst_idx=idx)
    nl.store(out, value=y)
    nl.store(where, value=idx)
    return out, where
"""


def test_nc_match_replace8_replaces_first_occurrences(kernel_file) -> None:
    # vals are walked from the last to the first; the two 5s take positions 0 and 2,
    # vals[1] first (position 0), then vals[0] (position 2).
    data = np.array([[5, 7, 5, 1, 2, 3, 4, 6, 8, 9, 5]], np.float32)
    vals = np.array([[5, 5, 7, 1, 2, 3, 4, 6]], np.float32)
    r = run(kernel_file, MATCH, data=data, vals=vals)
    out, where = r.outputs
    assert out.tolist() == [[-1.0] * 8 + [8.0, 9.0, 5.0]]
    assert where.tolist() == [[2, 0, 1, 3, 4, 5, 6, 7]]


def test_nc_match_replace8_refuses_a_value_not_in_the_row(kernel_file) -> None:
    data = np.array([[5, 7, 5, 1, 2, 3, 4, 6, 8, 9, 5]], np.float32)
    vals = np.array([[42, 5, 7, 1, 2, 3, 4, 6]], np.float32)
    with pytest.raises(SimError, match="not in partition 0"):
        run(kernel_file, MATCH, data=data, vals=vals)


SHUFFLE = """
@nki.jit
def k(x):
    out = nl.ndarray((32, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    dst = nl.full((32, 2), -1.0, dtype=nl.float32)
    nisa.nc_stream_shuffle(src=nl.load(x), dst=dst, shuffle_mask=MASK)
    nl.store(out, value=dst)
    return out
"""


def test_nc_stream_shuffle_moves_partitions_within_a_quadrant(kernel_file) -> None:
    # Output partition i takes input partition 31 - i; 255 leaves partition 0 as it was.
    x = np.arange(64, dtype=np.float32).reshape(32, 2)
    mask = [255] + [31 - i for i in range(1, 32)]
    r = run(kernel_file, SHUFFLE.replace("MASK", repr(mask)), x=x)
    want = x[::-1].copy()
    want[0] = -1.0
    assert r.outputs.tolist() == want.tolist()


def test_nc_stream_shuffle_needs_a_32_entry_mask(kernel_file) -> None:
    x = np.zeros((32, 2), np.float32)
    with pytest.raises(SimError, match="32 entries"):
        run(kernel_file, SHUFFLE.replace("MASK", repr(list(range(31)))), x=x)


DYNAMIC = """
@nki.jit
def k(x, off):
    out = nl.ndarray((2, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    offsets = OFFSETS
    i_p, i_f = nl.mgrid[0:2, 0:3]
    part = nisa.tensor_copy_dynamic_src(nl.load(x)[i_p, i_f + offsets[0, 1]])
    dst = nl.zeros((2, 8), dtype=nl.float32)
    nisa.tensor_copy_dynamic_dst(dst=dst[i_p, i_f + offsets[0, 0]], src=part)
    nl.store(out, value=dst)
    return out
"""


def test_tensor_copy_dynamic_reads_and_writes_at_an_offset_held_in_sbuf(kernel_file) -> None:
    # src window x[:, 4:7] (offset 4), written to dst[:, 1:4] (offset 1).
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    off = np.array([[1, 4]], np.uint32)
    r = run(kernel_file, DYNAMIC.replace("OFFSETS", "nl.load(off)"), x=x, off=off)
    want = np.zeros((2, 8), np.float32)
    want[:, 1:4] = x[:, 4:7]
    assert r.outputs.tolist() == want.tolist()
    copies = [i for i in r.trace if i.op.startswith("tensor_copy_dynamic")]
    assert [i.op for i in copies] == ["tensor_copy_dynamic_src", "tensor_copy_dynamic_dst"]
    # max(MIN_II_DYNAMIC, N) cycles, ~600 for a 3-element row; the offset tile is read.
    assert all(i.cycles == 600 and len(i.reads) == 2 for i in copies)


def test_tensor_copy_dynamic_offset_must_be_on_chip(kernel_file) -> None:
    x = np.zeros((2, 8), np.float32)
    off = np.array([[1, 4]], np.uint32)
    with pytest.raises(SimError, match="on-chip"):
        run(kernel_file, DYNAMIC.replace("OFFSETS", "off"), x=x, off=off)


BOUNDS = """
@nki.jit
def k(ids):
    out = nl.ndarray((1, 2, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    b = nisa.sequence_bounds(segment_ids=nl.load(ids))
    nl.store(out, value=b)
    return out
"""


def test_sequence_bounds_gives_each_run_its_start_and_end(kernel_file) -> None:
    # Runs [1, 1] at 0:2, [2, 2, 2] at 2:5, [3] at 6:7; ids 0 are padding (start 8, end -1).
    ids = np.array([[1, 1, 2, 2, 2, 0, 3, 0]], np.float32)
    r = run(kernel_file, BOUNDS, ids=ids)
    assert r.outputs.tolist() == [[[0, 0, 2, 2, 2, 8, 6, 8], [2, 2, 5, 5, 5, -1, 7, -1]]]
    assert next(i for i in r.trace if i.op == "sequence_bounds").engine == "gpsimd"


def test_sequence_bounds_takes_one_partition(kernel_file) -> None:
    with pytest.raises(SimError, match="one partition"):
        run(kernel_file, BOUNDS, ids=np.ones((2, 8), np.float32))


GATHER_LOCAL = """
@nki.jit
def k(src, idx):
    out = nl.ndarray(OUT, dtype=nl.float32, buffer=nl.shared_hbm)
    g = nisa.local_gather(nl.load(src), nl.load(idx), 2, VALID)
    nl.store(out, value=g)
    return out
"""


def test_local_gather_uses_one_index_list_per_16_partitions(kernel_file) -> None:
    # 32 partitions (two GpSimd cores), rows of 8: value 100 * p + f. Index column 0 is
    # 2 on core 0's partitions, 6 on core 1's; column 1 is 0. The list is read partition
    # first: 16 twos (or sixes) then 16 zeros; each index picks 2 elements.
    p = np.arange(32, dtype=np.float32)[:, None]
    src = 100 * p + np.arange(8, dtype=np.float32)[None, :]
    idx = np.zeros((32, 2), np.int32)
    idx[:16, 0], idx[16:, 0] = 2, 6
    body = GATHER_LOCAL.replace("OUT", "(32, 2, 16, 2)").replace("VALID", "None")
    r = run(kernel_file, body, src=src, idx=idx)
    start = np.where(np.arange(32) < 16, 2, 6)[:, None, None]
    picks = np.concatenate([np.broadcast_to(start, (32, 16, 1)), np.zeros((32, 16, 1))], 1)
    want = 100 * p[:, :, None] + picks + np.arange(2)[None, None, :]
    assert r.outputs.reshape(32, 32, 2).tolist() == want.tolist()
    # Three valid indices per core: the first three of the list, all column 0.
    body = GATHER_LOCAL.replace("OUT", "(32, 3, 2)").replace("VALID", "3")
    r = run(kernel_file, body, src=src, idx=idx)
    assert r.outputs.tolist() == want[:, :3].tolist()


def test_local_gather_index_must_stay_in_the_row(kernel_file) -> None:
    src = np.zeros((16, 8), np.float32)
    idx = np.full((16, 1), 7, np.int32)  # 7 + 1 reaches past a row of 8
    body = GATHER_LOCAL.replace("OUT", "(16, 1, 16, 2)").replace("VALID", "None")
    with pytest.raises(SimError, match="past the 8-element row"):
        run(kernel_file, body, src=src, idx=idx)
