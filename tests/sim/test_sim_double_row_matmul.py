"""``nc_matmul(perf_mode=double_row)``, TensorE's FP8 double-row mode
(kernelopt.sim.isa_double_row), against results worked out by hand: stationary
``[K, 2, M]`` and moving ``[K, 2, N]`` give ``sum over k and the pair of s[k, l, m] *
v[k, l, n]`` (the aws-neuron-sdk nc_matmul test's golden, ``einsum("kli,klj->ij")``)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel
from kernelopt.sim.chips import chip_params

CURRENT = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(s, v):
    K, _, M = s.shape
    N = v.shape[2]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    st = nl.ndarray(s.shape, dtype=s.dtype, buffer=nl.sbuf)
    mv = nl.ndarray(v.shape, dtype=v.dtype, buffer=nl.sbuf)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=st, src=s)
    nisa.dma_copy(dst=mv, src=v)
    nisa.nc_matmul(dst=acc, stationary=st, moving=mv, perf_mode=nisa.matmul_perf_mode.double_row)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out
"""

BETA1 = """
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def k(s, v):
    out = nl.ndarray((s.shape[2], v.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
    st = nl.load(s)
    mv = nl.load(v)
    nl.store(out, value=nisa.nc_matmul(st, mv, perf_mode="double_row_gen3"))
    return out
"""

F8 = ml_dtypes.float8_e4m3fn


def _operands() -> tuple[np.ndarray, np.ndarray]:
    # K = 2, M = 1, N = 2. s[k, l, 0]: (1, 2) for k = 0 and (3, 0.5) for k = 1.
    s = np.array([[[1.0], [2.0]], [[3.0], [0.5]]], dtype=F8)
    # v[k, l, :]: k = 0: (1, 0), (0, 1); k = 1: (2, 2), (4, -4).
    v = np.array([[[1.0, 0.0], [0.0, 1.0]], [[2.0, 2.0], [4.0, -4.0]]], dtype=F8)
    return s, v


# out[0, 0] = 1*1 + 2*0 + 3*2 + 0.5*4 = 9; out[0, 1] = 1*0 + 2*1 + 3*2 + 0.5*(-4) = 6.
EXPECTED = [[9.0, 6.0]]


@pytest.mark.parametrize("source", [CURRENT, BETA1], ids=["current", "beta1"])
def test_the_pair_axis_is_contracted_with_k(kernel_file, source) -> None:
    path, _ = kernel_file(source)
    s, v = _operands()
    run = run_kernel(path, {"s": s, "v": v})
    assert run.outputs.tolist() == EXPECTED
    # One TensorE instruction streaming N columns at the 16-bit rate, twice the MACs.
    (matmul,) = [i for i in run.trace if i.op == "nc_matmul"]
    assert (matmul.free, matmul.stationary_free, matmul.wide) == (2, 1, False)
    assert matmul.macs == 2 * 2 * 1 * 2


def test_not_on_neuroncore_v2(kernel_file) -> None:
    path, _ = kernel_file(CURRENT)
    s, v = _operands()
    with pytest.raises(SimError, match="NeuronCore-v2"):
        run_kernel(path, {"s": s, "v": v}, params=chip_params("trn1"))


def test_fp8_operands_only(kernel_file) -> None:
    path, _ = kernel_file(CURRENT)
    s, v = _operands()
    with pytest.raises(SimError, match="must be fp8"):
        run_kernel(path, {"s": s.astype(np.float32), "v": v.astype(np.float32)})
