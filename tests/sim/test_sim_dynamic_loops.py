"""Registers and dynamic loops (kernelopt.sim.dynamic) against results worked out by
hand from the nki.isa.register_* and nki.language.dynamic_range / fori_loop pages, the
NkiTensor page's ``ap(scalar_offset=, indirect_dim=)`` and the NKI dynamic-loops deep
dive (every iteration ends with a drain and a barrier across the engines)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel
from kernelopt.sim.trn2 import DEFAULT_PARAMS

HEADER = """
import nki
import nki.isa as nisa
import nki.language as nl

"""

# Rows [0, n) of x doubled, the rest 0; n read at run time from an int32 tensor, the
# row an SBUF counter advanced by one per iteration (scalar_offset scales by dim 0's
# stride, 3 elements).
ROWS = """
@nki.jit
def k(x, n):
    out = nl.ndarray((4, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    zero = nl.ndarray((4, 3), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0.0)
    nisa.dma_copy(dst=out, src=zero)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    trips = nisa.register_alloc()
    nisa.register_load(trips, n_sb)
    row = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=row, value=0)
    for _ in nl.dynamic_range(trips):
        t = nl.ndarray((1, 3), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[3, 1], [1, 3]], scalar_offset=row, indirect_dim=0))
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out.ap(pattern=[[3, 1], [1, 3]], scalar_offset=row, indirect_dim=0), src=t)
        nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=1)
    return out
"""


def _x() -> np.ndarray:
    return np.arange(12, dtype=np.float32).reshape(4, 3)


def test_a_trip_count_loaded_from_memory(kernel_file) -> None:
    path, _ = kernel_file(HEADER + ROWS)
    run = run_kernel(path, {"x": _x(), "n": np.array([[2]], np.int32)})
    assert run.outputs.tolist() == [[0, 2, 4], [6, 8, 10], [0, 0, 0], [0, 0, 0]]


def test_each_iteration_ends_with_a_barrier(kernel_file) -> None:
    # With a 1 us barrier, the second iteration's first DMA starts no earlier than
    # 1 us after every instruction of the first iteration has finished.
    path, _ = kernel_file(HEADER + ROWS)
    params = dataclasses.replace(DEFAULT_PARAMS, dynamic_loop_barrier_ns=1000.0)
    run = run_kernel(path, {"x": _x(), "n": np.array([[2]], np.int32)}, params=params)
    ops = [i.op for i in run.trace]
    first, second = [i for i, op in enumerate(ops) if op == "dynamic_range_barrier"]
    body_end = max(run.timeline.end_ns[:first])
    assert run.timeline.start_ns[first] == body_end
    assert run.timeline.end_ns[first] == body_end + 1000.0
    assert min(run.timeline.start_ns[first + 1 : second]) >= body_end + 1000.0


def test_fori_loop_passes_the_iteration_value_as_a_register(kernel_file) -> None:
    # i = 1, 3 (step 2): out row i = x row i + 100; rows 0 and 2 stay 0. The default
    # indirect_dim=0 scales the register by dim 0's stride (3): it names a row.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((4, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    zero = nl.ndarray((4, 3), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0.0)
    nisa.dma_copy(dst=out, src=zero)

    def body(i):
        t = nl.ndarray((1, 3), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[3, 1], [1, 3]], scalar_offset=i))
        nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=100.0)
        nisa.dma_copy(dst=out.ap(pattern=[[3, 1], [1, 3]], scalar_offset=i), src=t)

    nl.fori_loop(1, 4, body, step=2)
    return out
"""
    path, _ = kernel_file(HEADER + body)
    run = run_kernel(path, {"x": _x()})
    assert run.outputs.tolist() == [[0, 0, 0], [103, 104, 105], [0, 0, 0], [109, 110, 111]]


def test_scalar_offset_along_the_last_dim_and_register_store(kernel_file) -> None:
    # register_alloc(5) then register_move(r, 7): x.ap(..., scalar_offset=r,
    # indirect_dim=1) reads x.flat[7:10]; register_store writes 7 into out[0, 3].
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((1, 4), dtype=nl.int32, buffer=nl.shared_hbm)
    r = nisa.register_alloc(5)
    nisa.register_move(r, 7)
    t = nl.ndarray((1, 3), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[12, 1], [1, 3]], scalar_offset=r, indirect_dim=1))
    u = nl.ndarray((1, 4), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u[:, 0:3], src=t)
    nisa.register_store(u[:, 3:4], r)
    nisa.dma_copy(dst=out, src=u)
    return out
"""
    path, _ = kernel_file(HEADER + body)
    run = run_kernel(path, {"x": _x().reshape(1, 12)})
    assert run.outputs.tolist() == [[7, 8, 9, 7]]


def test_a_loaded_bound_needs_the_data(kernel_file) -> None:
    path, _ = kernel_file(HEADER + ROWS)
    with pytest.raises(SimError, match="trace-only"):
        run_kernel(path, {"x": _x(), "n": np.array([[2]], np.int32)}, compute=False)


def test_a_register_in_python_control_flow_is_refused(kernel_file) -> None:
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((4, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    r = nisa.register_alloc(1)
    while r:
        pass
    return out
"""
    path, _ = kernel_file(HEADER + body)
    with pytest.raises(SimError, match="fori_loop"):
        run_kernel(path, {"x": _x()})
