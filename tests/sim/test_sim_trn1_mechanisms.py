"""The Trn1 element-wise mechanisms read off NKIBench's public profiles, each shown both
ways: on trn1 with the value its profile implies, on trn2 as the guides give it."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import run_kernel
from kernelopt.sim.chips import chip_params
from kernelopt.sim.cost import duration_ns

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
