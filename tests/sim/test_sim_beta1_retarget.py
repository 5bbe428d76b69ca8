"""A beta-1 result assigned into a declared tile is the instruction the current API
writes there: same transfer shape for a DMA transpose, and an accumulating matmul
that reads its PSUM bank."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from kernelopt.sim import run_kernel

CURRENT = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x, y):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((128, 2, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    ys = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=acc, value=0.0)
    nisa.dma_transpose(dst=xt[:, 1, 0:128], src=x[0:128, 0:128])
    nisa.dma_copy(dst=ys[:, 0:512], src=y[0:128, 0:512])
    nisa.nc_matmul(dst=acc[:, 0:512], stationary=xt[:, 1, 0:128], moving=ys[:, 0:512])
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res[:, 0:512], src=acc[:, 0:512])
    nisa.dma_copy(dst=out[0:128, 0:512], src=res[:, 0:512])
    return out
"""

BETA1 = """
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def k(x, y):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((128, 2, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    ys = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    xt[:, 1, 0:128] = nl.load_transpose2d(x[0:128, 0:128])
    ys[:, 0:512] = nl.load(y[0:128, 0:512])
    acc[:, 0:512] += nisa.nc_matmul(stationary=xt[:, 1, 0:128], moving=ys[:, 0:512])
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    res[:, 0:512] = nisa.tensor_copy(src=acc[:, 0:512], dtype=nl.float32)
    nl.store(out[0:128, 0:512], value=res[:, 0:512])
    return out
"""


def test_assigned_beta1_results_are_the_current_apis_instructions(tmp_path) -> None:
    rng = np.random.default_rng(0)
    inputs = {
        "x": rng.standard_normal((128, 128)).astype(ml_dtypes.bfloat16),
        "y": rng.standard_normal((128, 512)).astype(ml_dtypes.bfloat16),
    }
    runs = {}
    for name, text in (("current", CURRENT), ("beta1", BETA1)):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        runs[name] = run_kernel(path, dict(inputs))
    ignore = {"line", "reads", "writes"}  # allocation ids and source lines differ

    def fields(run):
        return [
            {k: v for k, v in dataclasses.asdict(i).items() if k not in ignore} for i in run.trace
        ]

    assert fields(runs["beta1"]) == fields(runs["current"])
    transpose = next(i for i in runs["beta1"].trace if i.op == "dma_transpose")
    matmul = next(i for i in runs["beta1"].trace if i.op == "nc_matmul")
    assert transpose.row_bytes > 128 * 2  # the DMA block, not the destination row
    assert matmul.psum_read and len(matmul.reads) == 3
    assert runs["beta1"].profile["total_time"] == runs["current"].profile["total_time"]
    # The stationary tile is x transposed: stationary.T @ moving = x @ y.
    want = inputs["x"].astype(np.float32) @ inputs["y"].astype(np.float32)
    assert np.allclose(runs["beta1"].outputs, want, atol=0.2, rtol=0.05)
