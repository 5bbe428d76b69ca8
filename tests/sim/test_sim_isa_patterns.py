"""The current API's pattern forms of ``nisa.iota`` and ``nisa.affine_select`` (the
latest nki.isa.iota and nki.isa.affine_select pages) and its SPMD queries
``nl.program_id``/``num_programs``/``program_ndim``, each against hand-computed values."""

from __future__ import annotations

import numpy as np

from kernelopt.sim import run_kernel

HEADER = """
import nki
import nki.isa as nisa
import nki.language as nl

"""


def _run(kernel_file, body: str, func: str | None = None, **inputs: np.ndarray):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs, func=func)


def test_iota_walks_its_pattern_per_partition(kernel_file) -> None:
    # value = 5 + 100 * p + 10 * w + x over w < 2, x < 3; then a pattern with no
    # offset (as nki-library's cascaded_max calls it): 0, 0, 2, 2 in every row.
    body = """
@nki.jit
def k():
    out = nl.ndarray((2, 10), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((2, 6), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(a, [[10, 2], [1, 3]], 5, 100)
    b = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.iota(pattern=[[2, 2], [0, 2]], dst=b)
    nisa.dma_copy(dst=out[:, 0:6], src=a)
    nisa.dma_copy(dst=out[:, 6:10], src=b)
    return out
"""
    assert _run(kernel_file, body).outputs.tolist() == [
        [5, 6, 7, 15, 16, 17, 0, 0, 2, 2],
        [105, 106, 107, 115, 116, 117, 0, 0, 2, 2],
    ]


def test_affine_select_compares_its_pattern_with_zero(kernel_file) -> None:
    # x - p >= 0 keeps the upper triangle; with the default cmp_op (equal) and
    # offset 1, 1 - p + x == 0 keeps the subdiagonal x = p - 1; -9 elsewhere.
    body = """
@nki.jit
def k():
    out = nl.ndarray((3, 6), dtype=nl.float32, buffer=nl.shared_hbm)
    ones = nl.ndarray((3, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    upper = nl.ndarray((3, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.affine_select(dst=upper, pattern=[[1, 3]], channel_multiplier=-1,
                       on_true_tile=ones, on_false_value=-9.0, cmp_op=nl.greater_equal)
    sub = nl.ndarray((3, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.affine_select(sub, [[1, 3]], 1, -1, ones, -9.0)
    nisa.dma_copy(dst=out[:, 0:3], src=upper)
    nisa.dma_copy(dst=out[:, 3:6], src=sub)
    return out
"""
    assert _run(kernel_file, body).outputs.tolist() == [
        [1, 1, 1, -9, -9, -9],
        [-9, 1, 1, 1, -9, -9],
        [-9, -9, 1, -9, 1, -9],
    ]


def test_program_queries_with_and_without_a_grid(kernel_file) -> None:
    # Without a grid: ndim 0, one program, id 0. On a [3] grid each program writes
    # 100 * ndim + 10 * num_programs() + id (num_programs' axes default is 0).
    body = """
@nki.jit
def q(x):
    out = nl.ndarray((1, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    i = nl.program_id()
    nisa.memset(dst=t, value=float(100 * nl.program_ndim() + 10 * nl.num_programs() + i))
    nisa.dma_copy(dst=out[:, i:i + 1], src=t)
    return out

def on_grid(x):
    return q[3](x)

@nki.jit
def single(x):
    out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    v = 100 * nl.program_ndim() + 10 * nl.num_programs() + nl.program_id(0)
    nisa.memset(dst=t, value=float(v))
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    x = np.zeros((1, 1), np.float32)
    assert _run(kernel_file, body, func="single", x=x).outputs[0, 0] == 10.0
    assert _run(kernel_file, body, func="on_grid", x=x).outputs.tolist() == [[130, 131, 132]]
