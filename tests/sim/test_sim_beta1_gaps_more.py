"""More constructs public beta-1 kernels use that the simulator once refused: each test
runs a small kernel of our own with the construct and checks values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def test_a_tile_sliced_with_a_step_along_its_free_axis(kernel_file) -> None:
    # nki-samples' contributed fft1d splits a tile's even and odd columns with
    # x[:, 0::2] and x[:, 1::2]: on chip, a free axis may be strided.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def evens_minus_odds(x):
    out = nl.ndarray((x.shape[0], x.shape[1] // 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    d = nl.ndarray((x.shape[0], x.shape[1] // 2), dtype=x.dtype, buffer=nl.sbuf)
    d[...] = t[:, 0::2] - t[:, 1::2]
    nl.store(out, value=d)
    return out
"""
    )
    x = np.array([[1.0, 2.0, 10.0, 3.0], [5.0, 1.0, 0.0, 4.0]], np.float32)
    r = run_kernel(path, {"x": x})
    assert r.outputs.tolist() == [[-1.0, 7.0], [4.0, -4.0]]


def test_a_step_along_the_partition_axis_is_refused(kernel_file) -> None:
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def every_other_row(x):
    out = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.copy(t[0::2, :]))
    return out
"""
    )
    x = np.ones((2, 4), np.float32)
    with pytest.raises(SimError, match="partition dimension and takes no step"):
        run_kernel(path, {"x": x})


def test_a_reshaped_tile_indexed_with_arange_expressions(kernel_file) -> None:
    # nki-samples' neuron-team transposes reshape a loaded [P, i, J] tile to [P, i * J]
    # and read it at [i_P, i_I * J + i_J]: a reshaped tile indexes like any tile.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def swap_inner(x):
    p, a, b = x.shape
    out = nl.ndarray((p, b, a), dtype=x.dtype, buffer=nl.shared_hbm)
    flat = nl.load(x).reshape((p, a * b))
    i_p, i_b, i_a = nl.mgrid[0:p, 0:b, 0:a]
    t = nl.ndarray((p, b, a), dtype=x.dtype, buffer=nl.sbuf)
    t[i_p, i_b, i_a] = nl.copy(flat[i_p, i_a * b + i_b])
    nl.store(out, value=t)
    return out
"""
    )
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    r = run_kernel(path, {"x": x})
    assert r.outputs.tolist() == [
        [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]],
        [[6.0, 9.0], [7.0, 10.0], [8.0, 11.0]],
    ]


def test_nki_language_constants_imports_beside_neuronxcc(kernel_file) -> None:
    # The neuron-team transpose file imports sizeinbytes from nki.language.constants
    # next to its neuronxcc.nki imports.
    path, _ = kernel_file(
        HEADER
        + """
from nki.language.constants import sizeinbytes

@nki.jit
def scaled(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), float(sizeinbytes(x.dtype))))
    return out
"""
    )
    x = np.array([[1.0, -2.0]], np.float32)
    assert run_kernel(path, {"x": x}).outputs.tolist() == [[4.0, -8.0]]


def test_a_slice_past_the_tensor_cut_back_by_a_mask(kernel_file) -> None:
    # The neuron-team transposes load img[nl.ds(p * 128, 128), ...] of a tensor with
    # fewer rows under a row mask, as an nl.arange range past the tensor is loaded.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def doubled(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n = x.shape[0]
    for t in nl.affine_range(2):
        i_p, i_f = nl.mgrid[0:4, 0:x.shape[1]]
        tile = nl.load(x[nl.ds(t * 4, 4), :], mask=(t * 4 + i_p < n))
        nl.store(out[nl.ds(t * 4, 4), :], value=nl.add(tile, tile), mask=(t * 4 + i_p < n))
    return out
"""
    )
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    assert run_kernel(path, {"x": x}).outputs.tolist() == (2 * x).tolist()


def test_a_slice_past_the_tensor_without_a_mask_is_refused(kernel_file) -> None:
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def past(x):
    out = nl.ndarray((4, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x[nl.ds(0, 4), :]))
    return out
"""
    )
    with pytest.raises(SimError, match="out of bounds"):
        run_kernel(path, {"x": np.ones((3, 2), np.float32)})
