"""Constructs public beta-1 optimisation ladders use (course solutions, tutorial rungs)
that the simulator once refused: each test runs a small kernel of our own with the
construct and checks values worked out with numpy."""

from __future__ import annotations

import numpy as np

from kernelopt.sim import run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def test_a_tile_reshape_merges_free_axes(kernel_file, uniform) -> None:
    # A conv2d packs a [C, h, w] window copy into the [C, h * w] moving tile of a
    # matmul with `.reshape`; on chip the free axes merge, the partition axis stays.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def packed(x, w):
    out = nl.ndarray((4, 6), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    window = nl.copy(t[:, 1:3, 0:3]).reshape((8, 6))
    acc = nl.zeros((4, 6), dtype=nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(nl.load(w), window)
    nl.store(out, value=acc)
    return out
"""
    )
    x, w = uniform((8, 4, 5)), uniform((8, 4), seed=1)
    r = run_kernel(path, {"x": x, "w": w})
    want = w.T @ x[:, 1:3, 0:3].reshape(8, 6)
    np.testing.assert_allclose(r.outputs, want, rtol=1e-5, atol=1e-6)


def test_tensor_tensor_broadcasts_a_size_one_free_axis(kernel_file, uniform) -> None:
    # A [P, 1, n] operand (a weight indexed with the three-axis grid's first and last
    # ranges) multiplies a [P, b, n] tile: its size-1 axis is read across b.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def scaled(x, w):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_b, i_n = nl.mgrid[0:4, 0:3, 0:5]
    t = nl.load(x)
    g = nl.load(w)
    r = nisa.tensor_tensor(t[i_p, i_b, i_n], g[i_p, i_n], nl.multiply)
    nl.store(out, value=r)
    return out
"""
    )
    x, w = uniform((4, 3, 5)), uniform((4, 5), seed=1)
    r = run_kernel(path, {"x": x, "w": w})
    np.testing.assert_allclose(r.outputs, x * w[:, None, :], rtol=1e-6)


def test_a_dma_mask_over_several_ranges_moves_only_what_it_keeps(kernel_file, uniform) -> None:
    # `mask=i_p * 3 + i_f < 10` on a [4, 3] tile of a 10-element vector: partitions 0-2
    # whole, partition 3 only its first element; the rest of the zeroed tile stays 0.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def spread(v):
    out = nl.ndarray((4, 3), dtype=v.dtype, buffer=nl.shared_hbm)
    t = nl.zeros((4, 3), dtype=v.dtype, buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:4, 0:3]
    nisa.dma_copy(src=v[i_p * 3 + i_f], dst=t[i_p, i_f], mask=i_p * 3 + i_f < 10)
    u = nl.load(v[i_p * 3 + i_f], mask=i_p * 3 + i_f < 10)
    both = nl.ndarray((4, 3), dtype=v.dtype, buffer=nl.sbuf)
    both[...] = nl.add(t, 0.0)
    nl.store(out[i_p, i_f], value=nl.add(both, u), mask=i_p * 3 + i_f < 10)
    nl.store(out[3, 1:3], value=both[3, 1:3])
    return out
"""
    )
    v = uniform((10,))
    r = run_kernel(path, {"v": v})
    want = np.zeros(12, np.float32)
    want[:10] = 2 * v
    np.testing.assert_allclose(r.outputs, want.reshape(4, 3), rtol=1e-6)


def test_a_kernel_file_importing_nkipy_loads(kernel_file) -> None:
    # aws-neuron/nkipy's kernels import nkipy for a host-side wrapper the simulator
    # never calls; where nkipy is not installed the file still loads.
    path, _ = kernel_file(
        HEADER
        + """
import nkipy.core.typing as nt
from nkipy.core.nki_op import wrap_nki_kernel

@nki.jit
def double(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out

def host(x: nt.tensor):
    return wrap_nki_kernel(double, [x])(x)
"""
    )
    x = np.array([[1.0, -2.0]], np.float32)
    assert run_kernel(path, {"x": x}, func="double").outputs.tolist() == [[2.0, -4.0]]
