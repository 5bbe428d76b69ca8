"""Constructs public beta-1 kernels use that the simulator once refused: each test runs
a small kernel of our own with the construct and checks values worked out by hand."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from kernelopt.sim import run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def test_a_dataclass_in_an_imported_helper_module(kernel_file) -> None:
    # nki-samples' reference attention.py declares its FlashConfig as a dataclass; a
    # wrapper beside it imports the module. Its annotations stay unevaluated (as in
    # the kernel file), and the dataclass machinery then looks the module up in
    # sys.modules, where it was not registered.
    kernel_file(
        HEADER
        + """
from dataclasses import dataclass

@dataclass(frozen=True)
class Config:
    scale: float = 3.0
    rows: int = 2

@nki.jit
def scaled(x, config=None):
    config = config or Config()
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:config.rows, :])
    nl.store(out[0:config.rows, :], value=nl.multiply(t, config.scale))
    return out
""",
        name="helper.py",
    )
    path, _ = kernel_file(
        """
from helper import Config, scaled

def run(x):
    return scaled(x, Config(scale=0.5))
"""
    )
    x = np.array([[2.0, 4.0], [-6.0, 8.0]], np.float32)
    r = run_kernel(path, {"x": x}, func="run")
    assert r.outputs.tolist() == [[1.0, 2.0], [-3.0, 4.0]]
    # Registered for the run only.
    assert not [
        m for m in sys.modules if m.startswith(("kernelopt_sim_module_", "kernelopt_sim_kernel_"))
    ]


def test_annotations_naming_what_the_simulator_lacks_are_not_evaluated(kernel_file) -> None:
    # Public beta-1 kernels annotate parameters `nt.mutable_tensor`, which the simulated
    # nki.typing does not define; the annotation is never evaluated.
    path, _ = kernel_file(
        HEADER
        + """
import neuronxcc.nki.typing as nt

@nki.jit
def copy(x: nt.mutable_tensor) -> nt.no_such_type:
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
"""
    )
    x = np.array([[1.0, 2.0]], np.float32)
    assert run_kernel(path, {"x": x}).outputs.tolist() == [[1.0, 2.0]]


def test_nc_matmul_copies_an_operand_in_psum_to_sbuf_first(kernel_file) -> None:
    # The public flash_attn_bwd passes nisa.nc_transpose results (PSUM) straight to
    # nisa.nc_matmul, whose operands TensorE reads from SBUF.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def product(x, b):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nisa.nc_transpose(nl.load(x))       # [3, 2], in PSUM
    y = nisa.nc_matmul(xt, nl.load(b))       # xt.T @ b = x @ b
    nl.store(out, value=y)
    return out
"""
    )
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    b = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], np.float32)
    r = run_kernel(path, {"x": x, "b": b})
    assert r.outputs.tolist() == [[4.0, 5.0], [10.0, 11.0]]
    ops = [i.op for i in r.trace]
    # Transpose, then the copy out of PSUM, then the matmul.
    assert ops.index("nc_transpose") < ops.index("activation") < ops.index("nc_matmul")


DYNAMIC_FORMS = """
@nki.jit
def k(x, off):
    out = nl.ndarray((2, 2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    offsets = nl.load(off)
    ix, iy, iz = nl.mgrid[0:2, 0:1, 0:3]
    data = nl.load(x)
    dst = nl.ndarray((2, 2, 3), dtype=nl.float32, buffer=nl.sbuf)
    dst[ix, 0, iz] = nisa.tensor_copy_dynamic_src(data[ix, offsets[0, 0] + iy, iz])
    dst[ix, 1, iz] = nisa.tensor_copy_dynamic_src(data[ix, offsets[0, 1], iz])
    nl.store(out, value=dst)
    return out
"""


def test_dynamic_offsets_written_tile_first_or_alone(kernel_file) -> None:
    # The SDK's tensor_copy_dynamic_src examples write the offset tile first,
    # `off[0, j] + iy`, and alone on a free axis, `t[ix, off[0, j], iz]`.
    x = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    off = np.array([[3, 1]], np.int32)
    path, _ = kernel_file(HEADER + DYNAMIC_FORMS)
    r = run_kernel(path, {"x": x, "off": off})
    want = np.stack([x[:, 3, :], x[:, 1, :]], axis=1)
    assert r.outputs.tolist() == want.tolist()
    copies = [i for i in r.trace if i.op == "tensor_copy_dynamic_src"]
    # Each copy reads its offset tile, as an indirect access reads its index tile.
    assert len(copies) == 2 and all(len(i.reads) == 2 for i in copies)


def test_simulate_kernel_runs_the_kernel_on_its_arguments(kernel_file) -> None:
    # nki.simulate_kernel(kernel, *args): the SDK's modulo-allocation tests pass a numpy
    # output the kernel stores into; the v2.25 page's example uses the returned value.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def double_into(a, out):
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))

@nki.jit
def plus_one(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), 1.0))
    return out

def run(a):
    b = np.ndarray(shape=a.shape, dtype=np.float32)
    nki.simulate_kernel(double_into, a, b)
    return nki.simulate_kernel(plus_one, b)
"""
    )
    a = np.array([[1.0, -2.0, 3.5]], np.float32)
    r = run_kernel(path, {"a": a}, func="run")
    assert r.outputs.tolist() == [[3.0, -3.0, 8.0]]


@pytest.mark.skipif(
    importlib.util.find_spec("torch_neuronx") is not None,
    reason="torch_neuronx is installed: its own nki_jit is imported",
)
def test_torch_neuronx_nki_jit_is_the_beta1_jit(kernel_file) -> None:
    # The SDK's mm-nisa-spmd.py example: `from torch_neuronx import nki_jit`, `@nki_jit`,
    # the output passed in, launched on an SPMD grid.
    path, _ = kernel_file(
        """
import numpy as np
import neuronxcc.nki.language as nl
from torch_neuronx import nki_jit

@nki_jit
def add_rows(a, out):
    i = nl.program_id(0)
    nl.store(out[i:i + 1, :], value=nl.add(nl.load(a[i:i + 1, :]), float(i)))

def run(a):
    out = np.zeros(a.shape, dtype=np.float32)
    add_rows[a.shape[0]](a, out)
    return out
"""
    )
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    r = run_kernel(path, {"a": a}, func="run")
    assert r.outputs.tolist() == [[1.0, 2.0], [4.0, 5.0]]


def test_a_masked_load_into_a_new_block_of_zeros_keeps_the_zeros(kernel_file) -> None:
    # A public blocked matmul ladder (nki_matmul_fully_optimized_ with masks) loads
    # partial K tiles into blocks of an nl.zeros block array: the block is made, and
    # zeroed, only after the load ran, and the rows the mask dropped must stay zero.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    out = nl.ndarray((2, 4, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.zeros((2, nl.par_dim(4), 3), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.mgrid[0:4, 0:3]
    for b in nl.affine_range(2):
        t[b, ip, jf] = nl.load(x[ip, jf], mask=(ip < 2 + b))
    for b in nl.affine_range(2):
        nl.store(out[b], value=t[b])
    return out
"""
    )
    x = np.arange(1, 13, dtype=np.float32).reshape(4, 3)
    r = run_kernel(path, {"x": x})
    want = np.zeros((2, 4, 3), np.float32)
    want[0, :2], want[1, :3] = x[:2], x[:3]
    assert r.outputs.tolist() == want.tolist()
    # Each block: its memset, then the load straight into it (no copy).
    assert [i.op for i in r.trace][:4] == ["memset", "dma_copy", "memset", "dma_copy"]


def test_load_transpose2d_takes_a_mask_that_cuts_the_source(kernel_file) -> None:
    # A public helper (load_tensor_block_T) loads [K, 128] blocks of a [K, M] tensor
    # transposed, `mask=(row < K) & (col < M)`, where the last block runs past K.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    out = nl.ndarray((2, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.zeros((2, 4), dtype=x.dtype, buffer=nl.sbuf)
    ir, ic = nl.mgrid[0:4, 0:2]
    ip, jf = nl.mgrid[0:2, 0:4]
    t[ip, jf] = nl.load_transpose2d(x[1 + ir, ic], mask=(1 + ir < 3))
    nl.store(out, value=t)
    return out
"""
    )
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    r = run_kernel(path, {"x": x})
    # Rows 1 and 2 of x, transposed, in the first two columns; the rest stays zero.
    assert r.outputs.tolist() == [[3.0, 5.0, 0.0, 0.0], [4.0, 6.0, 0.0, 0.0]]


def test_a_package_import_found_in_a_parent_folder_of_the_kernel(tmp_path) -> None:
    # awslabs/nki-autotune's kernels live in autotune/kernels/ and import
    # `autotune.allocation.utils` and `autotune.kernels.utils`: the repository root
    # is the folder a project runs from.
    (tmp_path / "proj" / "kernels").mkdir(parents=True)
    (tmp_path / "proj" / "helpers.py").write_text(
        "import neuronxcc.nki.language as nl\n\n"
        "def doubled(tile):\n"
        "    return nl.multiply(tile, 2.0)\n"
    )
    path = tmp_path / "proj" / "kernels" / "k.py"
    path.write_text(
        HEADER
        + """
from proj.helpers import doubled
import proj.helpers

@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=proj.helpers.doubled(doubled(nl.load(x))))
    return out
"""
    )
    x = np.array([[1.0, -2.0]], np.float32)
    assert run_kernel(path, {"x": x}).outputs.tolist() == [[4.0, -8.0]]


def test_tensor_itemsize_and_block_array_ndim(kernel_file) -> None:
    # nki-autotune's update_base_addr sizes buffers from tensor.ndim, .shape and
    # .itemsize (the beta-1 nki.tensor page's attributes), block arrays included.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x):
    out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 4), dtype=nl.bfloat16, buffer=nl.sbuf)
    b = nl.ndarray((3, nl.par_dim(128), 8), dtype=nl.float32, buffer=nl.sbuf)
    n = t.itemsize * 100 + b.ndim * 10 + b.itemsize
    nl.store(out, value=nisa.memset(shape=(1, 1), value=float(n), dtype=nl.float32))
    return out
"""
    )
    r = run_kernel(path, {"x": np.zeros((1, 1), np.float32)})
    assert r.outputs.tolist() == [[234.0]]


def test_logging_off_is_defined_and_disable_leaves_the_host_alone(kernel_file) -> None:
    # The public CS149 starter kernels call logging.disable(logging.OFF) after
    # importing neuronxcc.nki; the simulator's own process keeps its logging.
    import logging

    path, _ = kernel_file(
        HEADER
        + """
import logging
logging.disable(logging.OFF)

@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), float(logging.OFF > logging.CRITICAL)))
    return out
"""
    )
    x = np.array([[1.0, 2.0]], np.float32)
    assert run_kernel(path, {"x": x}).outputs.tolist() == [[2.0, 3.0]]
    assert logging.root.manager.disable == 0


def test_a_matmul_moving_tile_with_two_free_axes_keeps_them(kernel_file) -> None:
    # A public CS149 solution multiplies into a [128, 2, W] PSUM tile with a
    # [128, 2, W] moving tile: read flat, the result keeps the free axes.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(s, m):
    out = nl.ndarray((2, 2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((2, 2, 3), dtype=nl.float32, buffer=nl.psum)
    st, mv = nl.load(s), nl.load(m)
    acc += nl.matmul(st, mv, transpose_x=True)
    acc += nisa.nc_matmul(st, mv)
    nl.store(out, value=nl.copy(acc))
    return out
"""
    )
    s = np.array([[1.0, 0.0], [2.0, 1.0]], np.float32)  # [K, M]
    m = np.arange(12, dtype=np.float32).reshape(2, 2, 3)  # [K, 2, 3]
    r = run_kernel(path, {"s": s, "m": m})
    # out[i] = 2 * sum_k s[k, i] * m[k]: by hand.
    want = [[[24, 30, 36], [42, 48, 54]], [[12, 14, 16], [18, 20, 22]]]
    assert r.outputs.tolist() == want
    ops = [i.op for i in r.trace]
    # Both products accumulate in the PSUM tile itself.
    assert ops.count("nc_matmul") == 2 and "tensor_tensor" not in ops


def test_a_bool_predicate_selects_the_copy(kernel_file) -> None:
    # The SDK's copy-predicated example loads a numpy bool predicate.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(pred, a, b):
    out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    p, src = nl.load(pred), nl.load(a)
    dst = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.sbuf)
    dst[...] = nl.load(b)
    nisa.tensor_copy_predicated(src=src, dst=dst, predicate=p)
    nl.store(out, dst)
    return out
"""
    )
    pred = np.array([[True, False, True], [False, False, True]])
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    b = -a
    r = run_kernel(path, {"pred": pred, "a": a, "b": b})
    assert r.outputs.tolist() == [[1.0, -2.0, 3.0], [-4.0, -5.0, 6.0]]


def test_tensor_tensor_reads_a_column_operand_across_the_free_axes(kernel_file) -> None:
    # Public CS149 Trainium2 solutions add a [128, 1, 1] bias tile to a [128, H, W]
    # tile with nisa.tensor_tensor.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(x, c):
    out = nl.ndarray((2, 2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    col = nl.ndarray((2, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(src=c, dst=col)
    nl.store(out, value=nisa.tensor_tensor(t, col, op=nl.add))
    return out
"""
    )
    x = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    c = np.array([[[10.0]], [[20.0]]], np.float32)
    r = run_kernel(path, {"x": x, "c": c})
    assert r.outputs.tolist() == [[[10, 11], [12, 13]], [[24, 25], [26, 27]]]


def test_a_matmul_reads_a_strided_window_as_its_moving_tile(kernel_file) -> None:
    # A public CS149 solution multiplies input_tile[:, i:i + H, j:j + W] directly.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(s, m):
    out = nl.ndarray((1, 2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    st, mv = nl.load(s), nl.load(m)
    nl.store(out, value=nl.copy(nisa.nc_matmul(st, mv[:, 1:3, 0:2])))
    return out
"""
    )
    s = np.array([[1.0], [2.0]], np.float32)  # [K=2, M=1]
    m = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    r = run_kernel(path, {"s": s, "m": m})
    # out[0, a, b] = m[0, 1 + a, b] + 2 * m[1, 1 + a, b], by hand.
    assert r.outputs.tolist() == [[[3 + 24, 4 + 26], [6 + 30, 7 + 32]]]
