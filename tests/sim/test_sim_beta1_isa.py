"""Beta-1 ISA calls and nl.* ops beyond the elementwise basics, against hand-computed
results, and the engine and cost each one is documented with."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel
from kernelopt.sim.cost import duration_ns
from kernelopt.sim.trn2 import DEFAULT_PARAMS

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def run(kernel_file, body: str, **inputs):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs)


def test_tensor_tensor_scan_is_a_running_recurrence(kernel_file) -> None:
    # out[i] = a[i] * out[i-1] + b[i] from initial 1: a = [2, 3, 1], b = [1, 1, 5]
    # -> 2*1+1 = 3, 3*3+1 = 10, 1*10+5 = 15; the second row starts from 0.
    a = np.array([[2.0, 3.0, 1.0], [2.0, 3.0, 1.0]], np.float32)
    b = np.array([[1.0, 1.0, 5.0], [1.0, 1.0, 5.0]], np.float32)
    init = np.array([[1.0], [0.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(a, b, init):
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nisa.tensor_tensor_scan(nl.load(a), nl.load(b), initial=nl.load(init),
                                op0=np.multiply, op1=np.add)
    nl.store(out, value=s)
    return out
""",
        a=a,
        b=b,
        init=init,
    )
    assert r.outputs.tolist() == [[3.0, 10.0, 15.0], [1.0, 4.0, 9.0]]
    scan = next(i for i in r.trace if i.op == "tensor_tensor_scan")
    # 2N VectorE cycles (nki.isa.tensor_tensor_scan docs).
    assert scan.engine == "vector" and scan.inputs == 2


def test_tensor_scalar_reduce_returns_both_results(kernel_file) -> None:
    x = np.array([[1.0, -4.0, 2.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)
    res[:, 0:3] = nisa.tensor_scalar_reduce(data=nl.load(x), op0=nl.multiply, operand0=2.0,
                                            reduce_op=nl.max, reduce_res=res[:, 3])
    nl.store(out, value=res)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[2.0, -8.0, 4.0, 4.0]]
    ins = next(i for i in r.trace if i.op == "tensor_scalar_reduce")
    assert ins.extra_cycles == 64  # N + MIN_II


def test_activation_accumulator_registers_follow_reduce_cmd(kernel_file) -> None:
    # exp(0) = 1 everywhere: reset_reduce sums 3, reduce adds 3 more, reset clears.
    x = np.zeros((2, 3), np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    sums = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=sums[:, 0],
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.activation(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=sums[:, 1],
                    reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.activation(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=sums[:, 2],
                    reduce_cmd=nisa.reduce_cmd.reset)
    nl.store(out, value=sums)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[3.0, 6.0, 0.0]] * 2
    # Reading the accumulator out costs MIN_II more ScalarE cycles.
    acts = [i for i in r.trace if i.op == "activation"]
    assert {i.extra_cycles for i in acts} == {64}


def test_iota_and_statistics(kernel_file) -> None:
    x = np.array([[1.0, 2.0, 3.0, 6.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 5), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.ndarray((2, 5), dtype=nl.float32, buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:2, 0:3]
    res[:, 0:3] = nisa.iota(10 * i_p + 2 * i_f, dtype=nl.float32)
    stats = nisa.bn_stats(nl.load(x))
    mv = nisa.bn_aggr(stats)
    res[0:1, 3:5] = mv
    res[1:2, 3:5] = nl.var(nl.load(x), axis=1)[:, 0:1].broadcast_to((1, 2))
    nl.store(out, value=res)
    return out
""",
        x=x,
    )
    # iota: 10 p + 2 f; mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5.
    assert np.allclose(r.outputs, [[0, 2, 4, 3.0, 3.5], [10, 12, 14, 3.5, 3.5]])
    iota = next(i for i in r.trace if i.op == "iota")
    assert iota.engine == "gpsimd" and iota.cycles == 150 + 3


def test_documented_costs_replace_the_streaming_formula() -> None:
    from kernelopt.sim.trace import Instruction

    iota = Instruction("iota", "gpsimd", 1, (), (), partitions=128, free=512, cycles=150 + 512)
    assert duration_ns(iota, DEFAULT_PARAMS) == (150 + 512) / DEFAULT_PARAMS.gpsimd_clock_hz * 1e9


def test_where_comparisons_and_logic(kernel_file) -> None:
    x = np.array([[1.0, -2.0, 3.0, 0.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((3, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    res = nl.ndarray((3, 4), dtype=nl.float32, buffer=nl.sbuf)
    positive = nl.greater(t, 0.0)
    res[0:1, :] = nl.where(positive, t, nl.negative(t))            # |x|
    res[1:2, :] = nl.logical_not(positive)                          # x <= 0
    res[2:3, :] = nl.logical_and(positive, nl.less(t, 2.0))          # 0 < x < 2
    nl.store(out, value=res)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[1, 2, 3, 0], [0, 1, 0, 1], [1, 0, 0, 0]]
    engines = {i.op: i.engine for i in r.trace}
    assert engines["select"] == "vector"


def test_dma_transpose_returns_the_transposed_tile(kernel_file) -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((3, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.dma_transpose(x))
    return out
""",
        x=x,
    )
    assert np.array_equal(r.outputs, x.T)


def test_a_constant_mask_runs_or_skips_the_call(kernel_file) -> None:
    # mask=(i != 1) with i a loop index: iterations 0 and 2 add 1, iteration 1 issues
    # nothing, so r ends at 2; a false mask on a matmul's += leaves the PSUM tile alone.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nl.zeros((2, 4), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(3):
        r[...] = nl.add(r, 1.0, mask=(i != 1))
        r[...] = nl.load(x, mask=(i == 5))
    nl.store(out, value=r, mask=True)
    return out
"""
    )
    run = run_kernel(path, {"x": np.full((2, 4), 7.0, np.float32)})
    assert run.outputs.tolist() == [[2.0] * 4, [2.0] * 4]
    assert sum(1 for i in run.trace if i.op == "dma_copy") == 1  # the store only


def test_dropout_zeroes_with_its_probability_and_keeps_the_rest(kernel_file) -> None:
    # Row 0 has drop probability 0, row 1 probability 1 (a [P, 1] tile); nl.dropout
    # at rate 0.5 over 4,096 ones keeps about half, each kept element unchanged.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x, p):
    out = nl.ndarray((2, 4096), dtype=nl.float32, buffer=nl.shared_hbm)
    half = nl.ndarray((2, 4096), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nisa.dropout(t, nl.load(p)))
    nl.store(half, value=nl.dropout(t, 0.5))
    return out, half
"""
    )
    run = run_kernel(
        path,
        {"x": np.ones((2, 4096), np.float32), "p": np.array([[0.0], [1.0]], np.float32)},
    )
    out, half = run.outputs
    assert out[0].tolist() == [1.0] * 4096 and out[1].tolist() == [0.0] * 4096
    assert set(np.unique(half).tolist()) == {0.0, 1.0}
    assert 0.45 < half.mean() < 0.55
    assert run.trace[[i.op for i in run.trace].index("dropout")].engine == "vector"


def test_fmod_silu_dx_gelu_sigmoid_expand_dims_and_bool(kernel_file) -> None:
    # fmod keeps the dividend's sign: fmod(-7, 3) = -1 where mod gives 2. silu_dx(0) is
    # 0.5 and gelu_apprx_sigmoid(0) is 0; expand_dims makes (2, 1, 3), summed over axis 2.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    out = nl.ndarray((2, 7), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    y = nl.ndarray((2, 7), dtype=nl.float32, buffer=nl.sbuf)
    y[:, 0:1] = nl.fmod(t[:, 0:1], 3.0)
    y[:, 1:2] = nl.mod(t[:, 0:1], 3.0)
    y[:, 2:3] = nl.silu_dx(t[:, 1:2])
    y[:, 3:4] = nl.gelu_apprx_sigmoid(t[:, 1:2])
    y[:, 4:5] = nl.sum(nl.expand_dims(t, 1), axis=[2])[:, 0]
    y[:, 5:7] = nl.equal(t[:, 0:2], -7.0, dtype=nl.bool_)
    nl.store(out, value=y)
    return out
"""
    )
    x = np.array([[-7.0, 0.0, 1.0], [-7.0, 0.0, 2.0]], np.float32)
    run = run_kernel(path, {"x": x})
    assert run.outputs.tolist() == [
        [-1.0, 2.0, 0.5, 0.0, -6.0, 1.0, 0.0],
        [-1.0, 2.0, 0.5, 0.0, -5.0, 1.0, 0.0],
    ]


def test_max8_predicated_copy_and_partition_reduce(kernel_file) -> None:
    # Row 0 is 0..9 (top 8: 9..2), row 1 is 9..0 reversed with the same top 8. The
    # predicate x > 4 copies 100 where it holds; the partition sum of rows gives 9 per column.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    top = nl.ndarray((2, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    sel = nl.ndarray((2, 10), dtype=nl.float32, buffer=nl.shared_hbm)
    col = nl.ndarray((1, 10), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(top, value=nisa.max8(src=t))
    hundred = nl.full((2, 10), 100.0, dtype=nl.float32)
    out = nl.copy(t)
    nisa.tensor_copy_predicated(src=hundred, dst=out, predicate=nl.greater(t, 4.0, dtype=nl.uint8))
    nl.store(sel, value=out)
    nl.store(col, value=nisa.tensor_partition_reduce(np.add, t))
    return top, sel, col
"""
    )
    x = np.stack([np.arange(10.0), np.arange(10.0)[::-1]]).astype(np.float32)
    run = run_kernel(path, {"x": x})
    top, sel, col = run.outputs
    assert top.tolist() == [[9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0]] * 2
    assert sel[0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0] + [100.0] * 5
    assert sel[1].tolist() == [100.0] * 5 + [4.0, 3.0, 2.0, 1.0, 0.0]
    assert col.tolist() == [[9.0] * 10]
    engines = {i.op: i.engine for i in run.trace}
    assert engines["max8"] == "vector" and engines["tensor_partition_reduce"] == "gpsimd"


def test_a_predicate_must_be_an_unsigned_integer_tile(kernel_file) -> None:
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    out = nl.ndarray((2, 10), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    o = nl.copy(t)
    nisa.tensor_copy_predicated(src=t, dst=o, predicate=nl.greater(t, 4.0))
    nl.store(out, value=o)
    return out
"""
    )
    with pytest.raises(SimError, match="uint8, uint16 or uint32"):
        run_kernel(path, {"x": np.zeros((2, 10), np.float32)})


def test_top8_indices_and_the_shared_identity(kernel_file) -> None:
    # max8 then nc_find_index8 is a per-row top-8: row 0 (0..9) has its top at columns
    # 9..2, row 1 (9..0) at 0..7. shared_identity_matrix(3) is eye(3).
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    idx = nl.ndarray((2, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    eye = nl.ndarray((3, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(idx, value=nisa.nc_find_index8(data=t, vals=nisa.max8(src=t)))
    nl.store(eye, value=nl.load(nl.shared_identity_matrix(3, dtype=nl.float32)))
    return idx, eye
"""
    )
    x = np.stack([np.arange(10.0), np.arange(10.0)[::-1]]).astype(np.float32)
    idx, eye = run_kernel(path, {"x": x}).outputs
    assert idx.tolist() == [[9, 8, 7, 6, 5, 4, 3, 2], [0, 1, 2, 3, 4, 5, 6, 7]]
    assert eye.tolist() == np.eye(3).tolist()


def test_rand_draws_uniform_values_that_a_seed_repeats(kernel_file) -> None:
    # Tiles 0 and 1 follow the same seed (5, read from a tile) and are identical; tile 2
    # follows seed 7 and differs; every draw lies in [0, 1) and the mean is near 1/2.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(s):
    out = nl.ndarray((3, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    seed = nl.load(s)
    for i in nl.static_range(3):
        nl.random_seed(seed=seed if i < 2 else 7)
        nl.store(out[i], value=nl.rand((128, 512), dtype=nl.float32))
    return out
"""
    )
    run = run_kernel(path, {"s": np.array([[5]], np.int32)})
    a, b, c = run.outputs
    assert np.array_equal(a, b)
    assert 0.0 <= run.outputs.min() and run.outputs.max() < 1.0
    assert 0.45 < run.outputs.mean() < 0.55
    assert not np.array_equal(a, c)


def test_a_reduced_column_broadcasts_along_the_free_axis(kernel_file) -> None:
    # Row sums of [[1, 2], [3, 4]] are the [2] tile [3, 7]: its axis is the partition
    # axis, so broadcast to (2, 3) it repeats along each row.
    x = np.array([[1, 2], [3, 4]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nisa.tensor_reduce(np.add, data=nl.load(x), axis=(1,))
    nl.store(out, value=s.broadcast_to((2, 3)))
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[3, 3, 3], [7, 7, 7]]


def test_load_transpose2d_casts_to_its_dtype(kernel_file) -> None:
    # dtype= is "data type to cast the output type to": fp32 [[1, 2], [3, 4]] lands
    # transposed, [[1, 3], [2, 4]], in a bf16 tile (values exact in bf16).
    x = np.array([[1, 2], [3, 4]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load_transpose2d(x, dtype=nl.bfloat16)
    assert t.dtype == nl.bfloat16
    nl.store(out, value=nl.copy(t, dtype=nl.float32))
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[1, 3], [2, 4]]


def test_isa_tensor_reduce_numbers_the_axes_of_a_3d_tile_as_numpy_does(kernel_file) -> None:
    # A course kernel that passed on Trn2 in the beta-1 API (chenhzhu/asst4-trainium2
    # part2/conv2d_all_pass_no_ec.py @019fc6e) max-pools a [128, 2, W] tile with
    # axis=1 (the middle axis, into [128, W]) and then a [128, W/2, 2] view with axis=2.
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 10), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out[:, 0:4], value=nisa.tensor_reduce(nl.maximum, data=t, axis=1))
    nl.store(out[:, 4:7], value=nisa.tensor_reduce(nl.add, data=t, axis=[2]))
    nl.store(out[:, 7:10], value=nl.sum(t, axis=2))
    return out
""",
        x=x,
    )
    np.testing.assert_array_equal(r.outputs[:, 0:4], x.max(axis=1))
    np.testing.assert_array_equal(r.outputs[:, 4:7], x.sum(axis=2))
    np.testing.assert_array_equal(r.outputs[:, 7:10], x.sum(axis=2))


def test_a_partition_mask_cuts_per_partition_results_to_the_rows_it_keeps(kernel_file) -> None:
    # Three rows of a 4-row tile are kept (the ragged last tile of a row loop): bn_stats,
    # bn_aggr, max8 and nc_find_index8 write those rows of a result assigned into a
    # whole-tile region, as every masked instruction does; the fourth row keeps its memset.
    x = np.array(
        [[1.0, 3.0, 5.0, 7.0, 9.0, 2.0, 4.0, 6.0, 8.0, 0.0]] * 3 + [[0.0] * 10], np.float32
    )
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    out = nl.ndarray((4, 18), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(4)[:, None]
    keep = ip < 3
    t = nl.load(x[ip, nl.arange(10)[None, :]], mask=keep)
    res = nl.ndarray((4, 18), dtype=nl.float32)
    res[ip, nl.arange(18)[None, :]] = nisa.memset(shape=(4, 18), value=-1.0, dtype=nl.float32)
    stats = nl.ndarray((4, 6), dtype=nl.float32)
    stats[ip, nl.arange(6)[None, :]] = nisa.bn_stats(t, mask=keep)
    res[ip, nl.arange(2)[None, :]] = nisa.bn_aggr(stats, mask=keep)
    top = nl.ndarray((4, 8), dtype=nl.float32)
    top[ip, nl.arange(8)[None, :]] = nisa.max8(src=t, mask=keep)
    res[ip, 2 + nl.arange(8)[None, :]] = nl.copy(top, mask=keep)
    where = nisa.nc_find_index8(data=t, vals=top, mask=keep)
    res[ip, 10 + nl.arange(8)[None, :]] = nl.copy(where, dtype=nl.float32, mask=keep)
    nl.store(out, value=res)
    return out
"""
    )
    out = run_kernel(path, {"x": x}).outputs
    row = [4.5, 8.25]  # the mean of 0..9 and its variance (bn_aggr of one bn_stats)
    top8 = [9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0]
    at = [4.0, 8.0, 3.0, 7.0, 2.0, 6.0, 1.0, 5.0]  # where each of the top 8 sits in the row
    for r in range(3):
        np.testing.assert_allclose(out[r], row + top8 + at, rtol=1e-6)
    assert out[3].tolist() == [-1.0] * 18
