"""The beta-1 NKI API (``neuronxcc.nki``): each construct against a hand-computed result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernelopt.sim import SimError, check_kernel, run_kernel
from kernelopt.workload import load_workload

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""

BETA1 = Path(__file__).parent / "kernels" / "beta1"


def run(kernel_file, body: str, **inputs):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs)


def test_load_store_copies_a_tile(kernel_file) -> None:
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=t)
    return out
""",
        x=x,
    )
    assert np.array_equal(r.outputs, x)
    assert [i.op for i in r.trace] == ["dma_copy", "dma_copy"]


@pytest.mark.parametrize("transpose_x", [True, False])
def test_matmul_transpose_x(kernel_file, transpose_x: bool) -> None:
    # x = [[1, 2], [3, 4]], y = [[1, 0], [1, 1]]: x @ y = [[3, 2], [7, 4]];
    # x.T @ y = [[4, 3], [6, 4]].
    x = np.array([[1, 2], [3, 4]], np.float32)
    y = np.array([[1, 0], [1, 1]], np.float32)
    r = run(
        kernel_file,
        f"""
@nki.jit
def k(x, y):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    p = nl.matmul(nl.load(x), nl.load(y), transpose_x={transpose_x})
    nl.store(out, value=nl.copy(p))
    return out
""",
        x=x,
        y=y,
    )
    expected = [[4, 3], [6, 4]] if transpose_x else [[3, 2], [7, 4]]
    assert r.outputs.tolist() == expected
    # Without transpose_x the compiler transposes x on TensorE first.
    assert ("nc_transpose" in [i.op for i in r.trace]) is not transpose_x


def test_high_level_ops_return_new_tiles(kernel_file) -> None:
    x = np.array([[1.0, 4.0], [9.0, 16.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 7), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((2, 7), dtype=nl.float32, buffer=nl.sbuf)
    r[:, 0:2] = nl.rsqrt(t)                       # [[1, .5], [1/3, .25]]
    r[:, 2:3] = nl.max(t, axis=1, keepdims=True)  # [[4], [16]]
    r[:, 3:4] = nl.sum(t, axis=[1], keepdims=True)  # [[5], [25]]
    r[:, 4:5] = nl.divide(nl.subtract(r[:, 3:4], 1.0), 2.0)  # [[2], [12]]
    r[:, 5:6] = nl.maximum(nl.multiply(r[:, 2:3], -1.0), nl.add(r[:, 4:5], -20.0))  # [[-4], [-8]]
    r[:, 6:7] = nl.exp(nl.multiply(r[:, 2:3], 0.0))  # [[1], [1]]
    nl.store(out, value=r)
    return out
""",
        x=x,
    )
    expected = [[1, 0.5, 4, 5, 2, -4, 1], [1 / 3, 0.25, 16, 25, 12, -8, 1]]
    assert np.allclose(r.outputs, expected)
    engines = {i.op: i.engine for i in r.trace}
    assert engines["activation"] == "scalar" and engines["tensor_reduce"] == "vector"


def test_isa_calls_return_their_result(kernel_file) -> None:
    x = np.array([[2.0, 4.0]] * 3, np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((3, 6), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nl.ndarray((3, 6), dtype=nl.float32, buffer=nl.sbuf)
    r[:, 0:2] = nisa.activation(op=nl.exp, data=t, scale=0.0, bias=1.0)   # exp(1)
    r[:, 2:4] = nisa.reciprocal(t)                                        # 1/2, 1/4
    r[:, 4:6] = nisa.memset(shape=(3, 2), value=7.0, dtype=nl.float32)
    nl.store(out, value=r)
    return out
""",
        x=x,
    )
    assert np.allclose(r.outputs, [[np.e, np.e, 0.5, 0.25, 7, 7]] * 3)
    # Each result lands in r directly: no copies.
    assert "tensor_copy" not in [i.op for i in r.trace]
    assert [i.engine for i in r.trace if i.op == "reciprocal"] == ["vector"]


def test_plus_equals_accumulates_matmuls_in_psum(kernel_file) -> None:
    a = np.ones((256, 2), np.float32)
    b = np.full((256, 3), 2.0, np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(a, b):
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((2, 3), nl.float32, buffer=nl.psum)
    for i in nl.affine_range(2):
        acc += nl.matmul(nl.load(a[i * 128:(i + 1) * 128, :]),
                         nl.load(b[i * 128:(i + 1) * 128, :]), transpose_x=True)
    nl.store(out, value=nl.copy(acc))
    return out
""",
        a=a,
        b=b,
    )
    assert np.array_equal(r.outputs, np.full((2, 3), 512.0))  # 256 x 1 x 2
    # The matmuls write acc's bank; no vector add, and the temporaries take no PSUM.
    ops = [i.op for i in r.trace]
    assert ops.count("nc_matmul") == 2 and "tensor_tensor" not in ops
    matmul_writes = {i.writes[0][0] for i in r.trace if i.op == "nc_matmul"}
    assert len(matmul_writes) == 1


def test_sbuf_plus_equals_is_an_elementwise_add(kernel_file) -> None:
    x = np.array([[1.0, 2.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((1, 2), nl.float32)
    for i in nl.affine_range(3):
        acc += nl.load(x)
    nl.store(out, value=acc)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[3.0, 6.0]]


def test_arange_expressions_with_a_mask_touch_only_valid_rows(kernel_file) -> None:
    x = np.arange(200 * 2, dtype=np.float32).reshape(200, 2)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((200, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(2)[None, :]
    for t in nl.affine_range(2):
        valid = (t * 128 + i_p < 200)
        tile = nl.load(x[t * 128 + i_p, i_f], mask=valid)
        nl.store(out[t * 128 + i_p, i_f], value=nl.multiply(tile, 2.0, mask=valid), mask=valid)
    return out
""",
        x=x,
    )
    assert np.array_equal(r.outputs, 2 * x)
    # The second tile moves 72 rows, not 128.
    loads = [i for i in r.trace if i.op == "dma_copy" and i.hbm_read]
    assert [ld.partitions for ld in loads] == [128, 72]


def test_mgrid_and_out_of_bounds_without_mask(kernel_file) -> None:
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    out = nl.ndarray((100, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    ix = nl.mgrid[0:128, 0:4]
    t = nl.load(x[ix.p, ix.x])
    nl.store(out[ix.p, ix.x], value=t)
    return out
"""
    )
    with pytest.raises(SimError) as err:
        run_kernel(path, {"x": np.zeros((100, 4), np.float32)})
    assert err.value.kind == "isa" and "no mask= cuts it" in str(err.value)


def test_loop_reduce_shared_constant_and_lazy_zeros(kernel_file) -> None:
    x = np.array([[1.0, 5.0], [3.0, 2.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    bias = nl.shared_constant(np.array([[10.0, 20.0], [30.0, 40.0]], np.float32), dtype=nl.float32)
    acc = nl.zeros((2, 2), nl.float32, buffer=nl.psum, lazy_initialization=True)
    for i in nl.affine_range(3):
        m = nl.loop_reduce(nl.multiply(nl.load(x), float(i)), op=np.maximum, loop_indices=[i])
    acc += nl.matmul(nl.load(bias), m, transpose_x=True)   # bias.T @ (2 x)
    nl.store(out, value=nl.copy(acc))
    return out
""",
        x=x,
    )
    # m = max over i of i * x = 2 x; bias.T @ 2x = [[10, 30], [20, 40]] @ [[2, 10], [6, 4]].
    assert r.outputs.tolist() == [[200.0, 220.0], [280.0, 360.0]]
    # lazy_initialization: no memset is issued for acc.
    assert "memset" not in [i.op for i in r.trace]


def test_block_array_with_par_dim_on_a_later_axis(kernel_file) -> None:
    x = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    blocks = nl.ndarray((2, 3, nl.par_dim(128), 4), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        for j in nl.affine_range(3):
            blocks[i, j, nl.arange(128)[:, None], nl.arange(4)[None, :]] = nl.load(x)
    total = nl.zeros((128, 4), nl.float32)
    for i in nl.affine_range(2):
        for j in nl.affine_range(3):
            total[...] = nl.add(total, blocks[i, j])
    nl.store(out, value=total)
    return out
""",
        x=x,
    )
    assert np.array_equal(r.outputs, 6 * x)


BIG_BLOCKS = """
@nki.jit
def k(x):
    out = nl.ndarray((128, 8192), dtype=nl.float32, buffer=nl.shared_hbm)
    # 64 blocks of 32 KiB per partition: 2 MiB, ten times one partition's SBUF.
    big = nl.ndarray((64, nl.par_dim(128), 8192), dtype=nl.float32, buffer=nl.sbuf)
    for b in nl.affine_range(64):
        big[b] = nl.load(x)
        {use}
    nl.store(out, value=big[63])
    return out
"""


def test_block_arrays_are_charged_by_liveness(kernel_file) -> None:
    # Each block dies before the next is loaded: fits, nothing spills.
    path, _ = kernel_file(HEADER + BIG_BLOCKS.format(use="nl.store(out, value=big[b])"))
    r = run_kernel(path, {"x": np.zeros((128, 8192), np.float32)}, compute=False)
    assert not [i for i in r.trace if i.op.startswith("spill")]
    # All blocks live at once (each still read at the end): 2 MiB per partition
    # cannot stay in 192 KiB, so the compiler's allocator spills blocks to HBM
    # and reloads them before their last read, as the NKIBench profiles show.
    keep = BIG_BLOCKS.replace(
        "    nl.store(out, value=big[63])",
        "    for b in nl.affine_range(64):\n        nl.store(out, value=big[b])",
    )
    path, _ = kernel_file(HEADER + keep.format(use="pass"), name="all_live.py")
    r = run_kernel(path, {"x": np.zeros((128, 8192), np.float32)}, compute=False)
    saves = [i for i in r.trace if i.op == "spill_save"]
    reloads = [i for i in r.trace if i.op == "spill_reload"]
    # At most 5 blocks of 32 KiB fit beside each other: the rest go out and back.
    assert len(saves) == len(reloads) >= 64 - 6
    assert all(i.nbytes == 128 * 8192 * 4 for i in saves)
    # The HBM traffic counts them: 64 stores of the output plus the spill stores.
    assert r.profile["hbm_write_bytes"] == (64 + len(saves)) * 128 * 8192 * 4


def test_unknown_engine_and_numpy_ops_are_accepted(kernel_file) -> None:
    x = np.array([[1.0, -2.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    y = nisa.tensor_scalar(t, np.multiply, 3.0, engine=nki.isa.unknown_engine)
    z = nisa.tensor_tensor(y, t, op=np.add)
    nl.store(out, value=z)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[4.0, -8.0]]


def test_beta2_tiles_still_reject_assignment(kernel_file) -> None:
    path, line = kernel_file(
        """
import nki
import nki.language as nl

@nki.jit
def k(x):
    t = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.sbuf)
    t[...] = 1.0  # <-
    return x
"""
    )
    with pytest.raises(SimError) as err:
        run_kernel(path, {"x": np.zeros((1, 2), np.float32)})
    assert err.value.line == line and "ISA calls" in str(err.value)


def test_kernel_kwargs_reach_the_kernel_and_the_oracle(tmp_path: Path) -> None:
    workload = tmp_path / "workload.py"
    workload.write_text(
        "import numpy as np\n"
        "INPUT_SPECS = {'x': ((256, 300), 'float32'), 'weight': ((300,), 'float32')}\n"
        "KERNEL_KWARGS = {'eps': 0.5, 'padding': 1}\n"
        "def f_numpy(x, weight, eps):\n"
        "    return x / np.sqrt((x * x).mean(1, keepdims=True) + eps) * weight\n"
    )
    w = load_workload(workload, require=("f_numpy", "INPUT_SPECS"))
    report = check_kernel(BETA1 / "rmsnorm.py", w)
    assert report.correct, report.error
    # eps really reaches the kernel: the oracle with another eps disagrees.
    workload.write_text(workload.read_text().replace("+ eps)", "+ 2 * eps)"))
    w = load_workload(workload, require=("f_numpy", "INPUT_SPECS"))
    assert not check_kernel(BETA1 / "rmsnorm.py", w).correct


def test_beta1_fixtures_match_numpy() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 128)).astype(np.float32)
    b = rng.standard_normal((256, 1024)).astype(np.float32)
    run = run_kernel(BETA1 / "matmul_tiled.py", {"lhsT": a, "rhs": b})
    assert np.allclose(run.outputs, a.T @ b, atol=1e-3)
    x = rng.standard_normal((300, 40)).astype(np.float32)
    run = run_kernel(BETA1 / "softmax_rows.py", {"x": x})
    e = np.exp(x - x.max(1, keepdims=True))
    assert np.allclose(run.outputs, e / e.sum(1, keepdims=True), atol=1e-6)


def test_beta1_twin_of_the_tiled_matmul_gets_the_same_estimate() -> None:
    rng = np.random.default_rng(2)
    inputs = {
        "lhsT": rng.standard_normal((256, 256)).astype(np.float32),
        "rhs": rng.standard_normal((256, 1024)).astype(np.float32),
    }
    beta2 = run_kernel(Path(__file__).parent / "kernels" / "matmul_basic.py", inputs)
    beta1 = run_kernel(BETA1 / "matmul_tiled.py", inputs)
    assert [i.op for i in beta1.trace] == [i.op for i in beta2.trace]
    assert beta1.profile["total_time"] == beta2.profile["total_time"]
    assert np.array_equal(beta1.outputs, beta2.outputs)


def test_high_level_copies_out_of_psum_run_on_scalar_engine(kernel_file) -> None:
    x = np.ones((128, 4), np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    p = nl.matmul(t, t, transpose_x=True)        # PSUM
    nl.store(out, value=p)                        # the compiler copies it out of PSUM
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[128.0] * 4] * 4
    copies = [i for i in r.trace if i.op == "activation"]
    assert len(copies) == 1 and copies[0].engine == "scalar" and copies[0].psum_read


def test_psum_block_array_accumulates_through_index_expressions(kernel_file) -> None:
    # out[b] = sum_k x[b, k].T @ y[b, k]; x, y of ones: every element is 2 x 128.
    x = np.ones((2, 2, 128, 4), np.float32)
    y = np.ones((2, 2, 128, 8), np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x, y):
    out = nl.ndarray((2, 4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((2, nl.par_dim(4), 8), dtype=np.float32, buffer=nl.psum,
                   lazy_initialization=True)
    i_p, i_f = nl.mgrid[0:4, 0:8]
    for b in nl.affine_range(2):
        for kk in nl.affine_range(2):
            acc[b, i_p, i_f] += nisa.nc_matmul(nl.load(x[b, kk]), nl.load(y[b, kk]))
        nl.store(out[b], value=acc[b])
    return out
""",
        x=x,
        y=y,
    )
    assert np.array_equal(r.outputs, np.full((2, 4, 8), 256.0))
    assert "memset" not in [i.op for i in r.trace]
    assert [i.op for i in r.trace].count("tensor_tensor") == 0


def test_broadcast_to_across_partitions_uses_tensor_engine(kernel_file) -> None:
    w = np.array([[1.0, 2.0, 3.0]], np.float32)
    c = np.array([[2.0], [3.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(w, c):
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    rows = nl.load(w).broadcast_to((2, 3))       # [1, 3] -> [2, 3]: across partitions
    cols = nl.load(c).broadcast_to((2, 3))       # [2, 1] -> [2, 3]: along the free axis
    nl.store(out, value=nl.multiply(rows, cols))
    return out
""",
        w=w,
        c=c,
    )
    assert r.outputs.tolist() == [[2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]
    engines = [(i.op, i.engine) for i in r.trace]
    assert ("nc_matmul", "tensor") in engines and ("tensor_copy", "vector") in engines
    assert r.profile["mac_count"] == 0  # a broadcast is not useful work


def test_softmax_iota_and_compiler_directives(kernel_file) -> None:
    x = np.array([[0.0, np.log(3.0)]] * 2, np.float32)
    r = run(
        kernel_file,
        """
import neuronxcc.nki.compiler as ncc

@nki.compiler.skip_middle_end_transformations
@nki.jit
def k(x):
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    r = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.sbuf)
    r[:, 0:2] = nl.softmax(nl.load(x), axis=1)          # [1/4, 3/4]
    r[:, 2:3] = nisa.iota(nl.arange(2)[:, None] + 5, dtype=nl.float32)   # 5, 6
    nl.store(out, value=r)
    return out
""",
        x=x,
    )
    assert np.allclose(r.outputs, [[0.25, 0.75, 5.0], [0.25, 0.75, 6.0]])
    assert [i.engine for i in r.trace if i.op == "iota"] == ["gpsimd"]
