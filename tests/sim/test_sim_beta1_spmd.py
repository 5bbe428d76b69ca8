"""Beta-1 SPMD launches, numpy arguments from a wrapper, and direct allocation."""

from __future__ import annotations

import numpy as np

from kernelopt.sim import run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""

GRID_KERNEL = """
@nki.jit
def add_tile(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.program_id(0) * 2 + nl.arange(2)[:, None]
    i_f = nl.program_id(1) * 3 + nl.arange(3)[None, :]
    nl.store(out[i_p, i_f], value=nl.load(a[i_p, i_f]) + nl.load(b[i_p, i_f]))
    return out

def add(a, b):
    return add_tile[a.shape[0] // 2, a.shape[1] // 3](a, b)
"""


def test_a_grid_runs_every_program_into_one_output(kernel_file) -> None:
    a = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    b = np.full((4, 6), 100.0, np.float32)
    path, _ = kernel_file(HEADER + GRID_KERNEL)
    r = run_kernel(path, {"a": a, "b": b}, func="add")
    assert np.array_equal(r.outputs, a + b)
    # Four programs, each two loads, an add and a store.
    assert [i.op for i in r.trace].count("dma_copy") == 4 * 3


def test_program_ids_and_counts(kernel_file) -> None:
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def ids(x):
    out = nl.ndarray((1, 6), dtype=nl.float32, buffer=nl.shared_hbm)
    n = nl.num_programs(0) * nl.num_programs(1)
    slot = nl.program_id(0) * nl.num_programs(1) + nl.program_id(1)
    t = nisa.memset(shape=(1, 1), value=float(10 * slot + n), dtype=nl.float32)
    nl.store(out[0:1, slot:slot + 1], value=t)
    return out

def launch(x):
    return ids[2, 3](x)
"""
    )
    r = run_kernel(path, {"x": np.zeros((1, 1), np.float32)}, func="launch")
    assert r.outputs.tolist() == [[6.0, 16.0, 26.0, 36.0, 46.0, 56.0]]


def test_a_numpy_output_from_a_baremetal_wrapper_gets_the_result(kernel_file) -> None:
    # The tutorial style: the wrapper passes a numpy array the kernel stores into.
    path, _ = kernel_file(
        HEADER
        + """
def add_kernel(a, b, c):
    i_p = nl.program_id(0) * 2 + nl.arange(2)[:, None]
    i_f = nl.arange(3)[None, :]
    nl.store(c[i_p, i_f], value=nl.load(a[i_p, i_f]) + nl.load(b[i_p, i_f]))

def add(a, b):
    c = np.zeros(a.shape, dtype=a.dtype)
    nki.baremetal(add_kernel)[a.shape[0] // 2](a, b, c)
    return c
"""
    )
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    r = run_kernel(path, {"a": a, "b": np.ones((4, 3), np.float32)}, func="add")
    assert np.array_equal(r.outputs, a + 1)


PLACED = """
import neuronxcc.nki.compiler as ncc

@nki.jit
def k(x):
    out = nl.ndarray((4, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.float32,
                     buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=({copies},)))
    for i in nl.affine_range(4):
        buf[i] = nl.load(x[i])
        nl.store(out[i], value=nl.exp(buf[i]))
    return out
"""


def test_mod_alloc_places_blocks_in_rotating_copies(kernel_file) -> None:
    x = np.random.default_rng(0).standard_normal((4, 128, 512)).astype(np.float32)
    times = {}
    for copies in (1, 4):
        path, _ = kernel_file(HEADER + PLACED.format(copies=copies), name=f"k{copies}.py")
        r = run_kernel(path, {"x": x})
        assert np.allclose(r.outputs, np.exp(x), rtol=1e-5)
        blocks = [a for a in r.allocations if a.name.endswith("]")]
        # Block i sits at copy i % copies, 2 KiB apart.
        assert [a.address for a in blocks] == [(0, (i % copies) * 2048) for i in range(4)]
        times[copies] = r.profile["total_time"]
    # One copy serialises load, exp and store of every block; four overlap them.
    assert times[1] > 1.5 * times[4]
