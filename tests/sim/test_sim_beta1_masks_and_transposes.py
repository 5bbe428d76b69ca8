"""Beta-1 constructs public reference kernels lean on, each against a hand-computed
result: a mask that keeps no index, and a TensorE pass-through transpose of a tile
whose unwritten rows must not spoil the written ones."""

from __future__ import annotations

import numpy as np

from kernelopt.sim import run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def run(kernel_file, body: str, **inputs):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs)


def test_a_mask_that_keeps_no_index_issues_nothing(kernel_file) -> None:
    # Three rows in tiles of two: the second tile's mask keeps row 2 only, a third
    # tile's keeps none, so its load, multiply and store are not issued (as a false
    # constant mask) and the output is 2 * x.
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x):
    out = nl.ndarray((3, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:2, 0:2]
    for t in nl.affine_range(3):
        a = nl.load(x[t * 2 + i_p, i_f], mask=t * 2 + i_p < 3)
        b = nl.multiply(a, 2.0, mask=t * 2 + i_p < 3)
        nl.store(out[t * 2 + i_p, i_f], value=b, mask=t * 2 + i_p < 3)
    return out
""",
        x=x,
    )
    assert r.outputs.tolist() == [[2.0, 4.0], [6.0, 8.0], [10.0, 12.0]]


def test_a_pass_through_transpose_moves_unwritten_elements_only(kernel_file) -> None:
    # A [4, 2] tile with rows 0-1 loaded and rows 2-3 never written, transposed by
    # nc_matmul(is_transpose=True) against the identity: the written part lands as
    # x.T in columns 0-1 (the nki.isa.nc_transpose page: this is the TensorE
    # transpose, bit-accurate from NeuronCore-v3), the garbage only in columns 2-3.
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    r = run(
        kernel_file,
        """
@nki.jit
def k(x, ident):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:4, 0:2]
    t = nl.load(x[i_p, i_f], mask=i_p < 2)
    r = nisa.nc_matmul(t, nl.load(ident), is_transpose=True)
    nl.store(out, value=r[0:2, 0:2])
    return out
""",
        x=x,
        ident=np.eye(4, dtype=np.float32),
    )
    assert r.outputs.tolist() == [[1.0, 3.0], [2.0, 4.0]]
