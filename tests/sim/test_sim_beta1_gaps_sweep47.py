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
