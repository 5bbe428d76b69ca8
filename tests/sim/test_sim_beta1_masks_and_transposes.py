"""Beta-1 constructs public reference kernels lean on, each against a hand-computed
result: a mask that keeps no index, a TensorE pass-through transpose of a tile whose
unwritten rows must not spoil the written ones, and blocks placed by an allocation
function."""

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


def test_alloc_places_each_block_where_its_function_says(kernel_file) -> None:
    # nki.compiler.psum.alloc / sbuf.alloc (SDK 2.2x reference): func(idx, pdim_size,
    # fdim_size) returns (bank, start partition, byte address) in PSUM and (start
    # partition, byte address) in SBUF. Blocks 0 and 1 go to banks 5 and 2 (byte
    # 10240 and 4096 of each partition) and to SBUF bytes 64 and 64 + 8: x @ I lands
    # in both blocks, and 2 * x + 1 in the result.
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    r = run(
        kernel_file,
        """
import functools
import neuronxcc.nki.compiler as ncc

def bank_of(banks, idx, pdim_size, fdim_size):
    return (banks[idx[0]], 0, 0)

def sbuf_at(idx, pdim_size, fdim_size):
    return (0, 64 + idx[0] * fdim_size)

@nki.jit
def k(x, ident):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    ps = nl.ndarray((2, nl.par_dim(2), 2), dtype=nl.float32,
                    buffer=ncc.psum.alloc(functools.partial(bank_of, banks=(5, 2))))
    sb = nl.ndarray((2, nl.par_dim(2), 2), dtype=nl.float32, buffer=ncc.sbuf.alloc(sbuf_at))
    for i in nl.affine_range(2):
        ps[i] = nisa.nc_matmul(nl.load(ident), nl.load(x))
        sb[i] = nl.copy(ps[i])
    nl.store(out, value=nl.add(nl.add(sb[0], sb[1]), 1.0))
    return out
""",
        x=x,
        ident=np.eye(2, dtype=np.float32),
    )
    assert r.outputs.tolist() == [[3.0, 5.0], [7.0, 9.0]]
    blocks = {a.name: a.address for a in r.allocations if a.name.endswith("]")}
    assert sorted(blocks.values()) == [(0, 64), (0, 72), (0, 4096), (0, 10240)]
