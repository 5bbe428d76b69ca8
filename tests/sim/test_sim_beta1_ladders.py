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
