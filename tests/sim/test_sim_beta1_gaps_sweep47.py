"""Constructs public beta-1 kernels use that the simulator refused or got wrong, found by
the 47th sweep of public kernels: each test runs a small kernel of our own with the
construct and checks values worked out by hand."""

from __future__ import annotations

import numpy as np

from kernelopt.sim import run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def test_an_spmd_dim_of_several_parts_launches_their_product(kernel_file) -> None:
    # The nki.language.spmd_dim page: spmd_dim(nl.nc(2), 2) shards a grid axis of
    # four programs over two NeuronCores, so the axis holds 2 * 2 programs, whichever
    # part comes first (the SDK's multiple-NeuronCore tensor-addition tutorial writes
    # spmd_dim(grid_x, nl.nc(2))).
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def row_times_program(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    t = nl.load(x[i : i + 1, :])
    nl.store(out[i : i + 1, :], value=nl.multiply(t, i + 1))
    return out


def launch_nc_first(x):
    return row_times_program[nl.spmd_dim(nl.nc(2), 2)](x)


def launch_nc_last(x):
    return row_times_program[nl.spmd_dim(2, nl.nc(2))](x)
"""
    )
    x = np.ones((4, 3), np.float32)
    for func in ("launch_nc_first", "launch_nc_last"):
        r = run_kernel(path, {"x": x}, func=func)
        assert r.outputs.tolist() == [[1.0] * 3, [2.0] * 3, [3.0] * 3, [4.0] * 3]


def test_tensor_scalar_cumulative_runs_its_register_across_calls(kernel_file) -> None:
    # nki.isa.tensor_scalar_cumulative (v2.27.0 page): reg = op1(op0(x, imm0), reg) per
    # element, reset_reduce starting at op1's identity, load_reduce at imm1, reduce where
    # the last call left it; the SDK's own test chains reset_reduce and reduce.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def running(x, start):
    out = nl.ndarray((3,) + x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nl.load(start)
    first = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=first, src=t, op0=nl.multiply, op1=nl.add, imm0=2.0)
    again = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(
        dst=again, src=t, op0=nl.add, op1=nl.add, imm0=0.0, reduce_cmd=nisa.reduce_cmd.reduce
    )
    low = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(
        dst=low, src=t, op0=nl.subtract, op1=nl.min, imm0=s, imm1=s,
        reduce_cmd=nisa.reduce_cmd.load_reduce,
    )
    nl.store(out[0], value=first)
    nl.store(out[1], value=again)
    nl.store(out[2], value=low)
    return out
"""
    )
    x = np.array([[1.0, 3.0, -2.0], [0.5, 0.0, 4.0]], np.float32)
    start = np.array([[1.0], [-1.0]], np.float32)
    r = run_kernel(path, {"x": x, "start": start})
    # Row 0: 2x = 2, 6, -4 -> 2, 8, 4; then 4 + (1, 3, -2) -> 5, 8, 6;
    # min from 1 over x - 1 = 0, 2, -3 -> 0, 0, -3.
    # Row 1: 2x = 1, 0, 8 -> 1, 1, 9; then 9 + (0.5, 0, 4) -> 9.5, 9.5, 13.5;
    # min from -1 over x + 1 = 1.5, 1, 5 -> -1, -1, -1.
    assert r.outputs.tolist() == [
        [[2.0, 8.0, 4.0], [1.0, 1.0, 9.0]],
        [[5.0, 8.0, 6.0], [9.5, 9.5, 13.5]],
        [[0.0, 0.0, -3.0], [-1.0, -1.0, -1.0]],
    ]
