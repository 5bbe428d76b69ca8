"""Constructs public beta-1 kernels use that the simulator refused or got wrong, found by
the 48th sweep of public kernels: each test runs a small kernel of our own with the
construct and checks values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import run_kernel
from kernelopt.sim.errors import SimError

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def test_a_kernel_file_with_host_layers_on_absent_frameworks_loads(kernel_file) -> None:
    # A kernel file's host side imports einops and neuronx_distributed and subclasses
    # framework classes (an autograd Function, an nn layer); where they are not
    # installed the file loads, the kernel runs, and only building a layer fails.
    path, _ = kernel_file(
        HEADER
        + """
import torch
import torch.nn as nn
from einops import rearrange
import neuronx_distributed.parallel_layers.parallel_state as ps

class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return double(x)

class Layer(nn.Module):
    pass

@nki.jit
def double(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out

def build(x):
    return Layer()
"""
    )
    x = np.array([[1.0, -2.0]], np.float32)
    assert run_kernel(path, {"x": x}, func="double").outputs.tolist() == [[2.0, -4.0]]
    with pytest.raises(SimError, match="Layer subclasses a framework class"):
        run_kernel(path, {"x": x}, func="build")


def test_a_reduced_column_transposes_and_multiplies(kernel_file) -> None:
    # nl.sum(t, axis=1) is a [P] tile (the nki.language.sum page: the reduced axes
    # removed); nl.transpose reads it as [P, 1] into a [1, P] row, and nl.matmul takes
    # it as a [K] moving operand for an [M] result.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def sums(x, w):
    row = nl.ndarray((1, x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    prod = nl.ndarray((w.shape[0],), dtype=x.dtype, buffer=nl.shared_hbm)
    s = nl.sum(nl.load(x), axis=1)
    nl.store(row, value=nl.transpose(s))
    nl.store(prod, value=nl.matmul(nl.load(w), s))
    return row, prod
"""
    )
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)  # row sums 6, 15
    w = np.array([[1.0, 0.0], [2.0, -1.0], [0.5, 0.5]], np.float32)
    row, prod = run_kernel(path, {"x": x, "w": w}).outputs
    assert row.tolist() == [[6.0, 15.0]]
    assert prod.tolist() == [6.0, -3.0, 10.5]


def test_a_tile_split_by_reshape_is_indexed_with_expressions(kernel_file, uniform) -> None:
    # A [P, h * w] tile reshaped to [P, h, w] (its free axis split), then read through
    # a five-axis mgrid index space and max-reduced over the window axes: the average
    # pool tutorial's pattern applied to a reshaped result.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def pooled(x):
    out = nl.ndarray((x.shape[0], 2, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.add(nl.load(x), 0.0).reshape((x.shape[0], 4, 6))
    i0, i1, i2, i3, i4 = nl.mgrid[0:x.shape[0], 0:2, 0:2, 0:3, 0:2]
    nl.store(out, value=nl.max(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4]))
    return out
"""
    )
    x = uniform((3, 24))
    want = x.reshape(3, 2, 2, 3, 2).max(axis=(2, 4))
    np.testing.assert_array_equal(run_kernel(path, {"x": x}).outputs, want)


def test_isa_constants_gives_the_engine_and_mode_enums(kernel_file, uniform) -> None:
    # neuronxcc.nki.isa.constants (the v2.26.1 nc_transpose page names
    # nki.isa.constants.engine.tensor): a kernel chooses the transpose engine through it.
    path, _ = kernel_file(
        HEADER
        + """
from neuronxcc.nki.isa.constants import oob_mode

@nki.jit
def flipped(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nisa.nc_transpose(nl.load(x), engine=nki.isa.constants.engine.vector)
    nl.store(out, value=nl.copy(t))
    assert oob_mode.error is not None
    return out
"""
    )
    x = uniform((32, 16))
    np.testing.assert_array_equal(run_kernel(path, {"x": x}).outputs, x.T)
