"""The public beta-1 ``nl.*`` elementwise calls (2.26-era nki.language) that the API
audit found present but not checked against values: each runs in a small beta-1 kernel
against a reference written here from the function's definition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernelopt.sim import run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
"""

UNARY = (
    HEADER
    + """
@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.OP(nl.load(x)))
    return out
"""
)

BINARY = (
    HEADER
    + """
@nki.jit
def k(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.OP(nl.load(x), nl.load(y)))
    return out
"""
)

_erf = np.vectorize(math.erf)


def _phi(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


UNARY_REFERENCES = {
    "sign": np.sign,
    "trunc": np.trunc,
    "floor": np.floor,
    "ceil": np.ceil,
    "abs": np.abs,
    "negative": lambda x: -x,
    "sin": np.sin,
    "cos": np.cos,
    "arctan": np.arctan,
    "erf": _erf,
    "erf_dx": lambda x: 2.0 / math.sqrt(math.pi) * np.exp(-(x**2)),
    "gelu_dx": lambda x: _phi(x) + x * np.exp(-(x**2) / 2.0) / math.sqrt(2.0 * math.pi),
    "gelu_apprx_tanh": lambda x: (
        0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    ),
    "softplus": lambda x: np.log1p(np.exp(x)),
    "mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "silu_dx": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))),
    "logical_not": lambda x: (x == 0).astype(np.float64),
}


@pytest.mark.parametrize("name", sorted(UNARY_REFERENCES))
def test_unary_call_matches_its_definition(name, kernel_file) -> None:
    # -2.5 .. 2.5 in steps of 0.5, with 0 and the half-integers that trunc/floor/ceil split.
    x = np.linspace(-2.5, 2.5, 11, dtype=np.float32).reshape(1, 11)
    path, _ = kernel_file(UNARY.replace("OP", name))
    run = run_kernel(path, {"x": x})
    want = UNARY_REFERENCES[name](x.astype(np.float64))
    np.testing.assert_allclose(run.outputs, want, rtol=1e-5, atol=1e-6)


INT_BINARY_REFERENCES = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift,
    "right_shift": np.right_shift,
}


@pytest.mark.parametrize("name", sorted(INT_BINARY_REFERENCES))
def test_integer_binary_call_matches_numpy(name, kernel_file) -> None:
    x = np.array([[12, 5, 255, 1, 96]], np.int32)
    y = np.array([[10, 3, 15, 4, 2]], np.int32)
    path, _ = kernel_file(BINARY.replace("OP", name))
    run = run_kernel(path, {"x": x, "y": y})
    assert run.outputs.tolist() == INT_BINARY_REFERENCES[name](x, y).tolist()


FLOAT_BINARY_REFERENCES = {
    "fmod": np.fmod,
    "mod": np.mod,
    "power": np.power,
    "logical_and": lambda a, b: ((a != 0) & (b != 0)).astype(np.float64),
    "logical_or": lambda a, b: ((a != 0) | (b != 0)).astype(np.float64),
    "logical_xor": lambda a, b: ((a != 0) ^ (b != 0)).astype(np.float64),
    "greater_equal": lambda a, b: (a >= b).astype(np.float64),
    "not_equal": lambda a, b: (a != b).astype(np.float64),
}


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY_REFERENCES))
def test_float_binary_call_matches_its_definition(name, kernel_file) -> None:
    # fmod keeps the dividend's sign (-7 fmod 3 = -1), mod the divisor's (-7 mod 3 = 2).
    x = np.array([[-7.0, 7.0, 0.0, 2.0, 1.5]], np.float32)
    y = np.array([[3.0, -3.0, 2.0, 3.0, 2.0]], np.float32)
    path, _ = kernel_file(BINARY.replace("OP", name))
    run = run_kernel(path, {"x": x, "y": y})
    want = FLOAT_BINARY_REFERENCES[name](x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(run.outputs, want, rtol=1e-6)
