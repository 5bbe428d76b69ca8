"""The Trn1 mechanisms read off public Trn1 measurements (NKIBench's profiles, the NKI
matmul tutorial), each shown both ways: on trn1 with the value the measurement implies,
on trn2 as the guides and Trn2 measurements give it."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import run_kernel
from kernelopt.sim.chips import chip_params
from kernelopt.sim.cost import duration_ns
from kernelopt.sim.trace import Instruction

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def _run(kernel_file, body: str, chip: str, **inputs):
    path, _ = kernel_file(HEADER + body, name=f"k_{chip}.py")
    return run_kernel(path, inputs, params=chip_params(chip))


def test_trn1_runs_a_compiler_tensor_scalar_on_scalar_engine(kernel_file) -> None:
    # NKIBench adamw and silu: their ScalarE time is reached only with the multiply/add
    # tensor_scalars the kernels leave to the compiler on ScalarE. An operator ScalarE
    # lacks (maximum) and a named engine stay where they were.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nisa.tensor_scalar(data=t, op0=nl.multiply, operand0=2.0, op1=nl.add, operand1=1.0)
    m = nisa.tensor_scalar(data=s, op0=nl.maximum, operand0=0.0)
    v = nisa.tensor_scalar(data=m, op0=nl.multiply, operand0=0.5, engine=nisa.vector_engine)
    nl.store(out, value=v)
    return out
"""
    x = np.linspace(-2, 2, 128 * 64, dtype=np.float32).reshape(128, 64)
    engines = {}
    for chip in ("trn1", "trn2"):
        r = _run(kernel_file, body, chip, x=x)
        assert np.allclose(r.outputs, np.maximum(2 * x + 1, 0) * 0.5)
        engines[chip] = [i.engine for i in r.trace if i.op == "tensor_scalar"]
    assert engines == {"trn1": ["scalar", "vector", "vector"], "trn2": ["vector"] * 3}


def test_trn1_reciprocal_costs_what_the_profiles_leave_for_it(kernel_file) -> None:
    # The ISA docs' 8 VectorE cycles per element would keep silu's VectorE busy longer
    # than its whole measured latency; silu and swiglu leave ~2.65 for it on trn1.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.reciprocal(data=nl.load(x)))
    return out
"""
    x = np.linspace(1, 3, 128 * 512, dtype=np.float32).reshape(128, 512)
    cycles = {}
    for chip in ("trn1", "trn2"):
        params = chip_params(chip)
        r = _run(kernel_file, body, chip, x=x)
        assert np.allclose(r.outputs, 1 / x)
        ins = next(i for i in r.trace if i.op == "reciprocal")
        cycles[chip] = duration_ns(ins, params) * params.vector_clock_hz / 1e9
        cycles[chip] -= params.engine_static_cycles
    assert cycles["trn1"] == pytest.approx(2.65 * 512)
    assert cycles["trn2"] == pytest.approx(8 * 512)


def _matmul(wide: bool) -> Instruction:
    return Instruction(
        "nc_matmul",
        "tensor",
        1,
        (),
        (),
        partitions=128,
        free=512,
        stationary_free=128,
        wide=wide,
        macs=128 * 128 * 512,
    )


def test_trn1_tensor_engine_sustains_what_the_trn1_tutorial_measured() -> None:
    # The NKI matmul tutorial on trn1.32xlarge (bf16, [4096, 8192] @ [8192, 8192]):
    # 32,768 matmuls of 128 x 128 x 512 in 6.97 ms, TensorE-bound; the 2.8 GHz clock
    # alone would give 5.99 ms. fp32 makes four passes at that rate (NKIBench
    # transpose_matmul: 10,752 full fp32 matmuls and 512 partial ones, nothing
    # else on TensorE, 9.61 ms).
    trn1, trn2 = chip_params("trn1"), chip_params("trn2")
    bf16 = duration_ns(_matmul(wide=False), trn1)
    assert 32768 * bf16 == pytest.approx(6.97e6, rel=0.01)
    assert 32768 * 512 / trn1.tensor_clock_hz * 1e9 < 0.9 * 6.97e6
    assert duration_ns(_matmul(wide=True), trn1) == pytest.approx(4 * bf16)
    fp32_cases = 10752 * duration_ns(_matmul(wide=True), trn1)
    assert 0.9 * 9.61e6 < fp32_cases < 9.61e6
    # Trn2 streams a column per cycle: its scoreboard's 5120^3 GEMM ran 16,000 bf16
    # matmuls in 3.504 ms, host cost included (trn1's rate would need 3.97 ms).
    trn2_bf16 = duration_ns(_matmul(wide=False), trn2)
    assert trn2_bf16 == pytest.approx(512 / 2.4)
    assert 16000 * trn2_bf16 < 3.504e6


def test_an_fp32_transpose_takes_half_an_fp32_matmul_only_in_the_trn2_transpose_mode(
    kernel_file,
) -> None:
    # Trn2 architecture guide: NeuronCore-v3's TensorE transpose mode (nc_transpose on
    # TensorE, nc_matmul(is_transpose=True)) gives a "2x speedup in FP32 transpose";
    # on NeuronCore-v2 a transpose is an fp32 matmul against an identity.
    body = """
import nki as nk
import nki.isa as ni
import nki.language as nn

@nk.jit
def k(x, eye):
    xs = nn.ndarray((128, 128), dtype=nn.float32, buffer=nn.sbuf)
    ni.dma_copy(xs, x)
    es = nn.ndarray((128, 128), dtype=nn.float32, buffer=nn.sbuf)
    ni.dma_copy(es, eye)
    a = nn.ndarray((128, 128), dtype=nn.float32, buffer=nn.psum)
    ni.nc_matmul(a, xs, es, is_transpose=True)
    b = nn.ndarray((128, 128), dtype=nn.float32, buffer=nn.psum)
    ni.nc_transpose(b, xs, engine=ni.engine.tensor)
    c = nn.ndarray((128, 128), dtype=nn.float32, buffer=nn.psum)
    ni.nc_matmul(c, xs, es)
    s = nn.ndarray((128, 384), dtype=nn.float32, buffer=nn.sbuf)
    ni.tensor_copy(s[:, 0:128], a)
    ni.tensor_copy(s[:, 128:256], b)
    ni.tensor_copy(s[:, 256:384], c)
    out = nn.ndarray((128, 384), dtype=nn.float32, buffer=nn.shared_hbm)
    ni.dma_copy(out, s)
    return out
"""
    x = np.linspace(-1, 1, 128 * 128, dtype=np.float32).reshape(128, 128)
    for chip, ratio in (("trn2", 0.5), ("trn1", 1.0)):
        params = chip_params(chip)
        r = _run(kernel_file, body, chip, x=x, eye=np.eye(128, dtype=np.float32))
        assert np.allclose(r.outputs, np.hstack([x.T, x.T, x.T]))
        costs = [duration_ns(i, params) for i in r.trace if i.engine == "tensor"]
        assert costs[:2] == pytest.approx([ratio * costs[2]] * 2)
