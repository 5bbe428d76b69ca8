"""The operators kernels name: ``nl.add``, ``nl.exp``, ... as ``op=`` values (and, in
the beta-1 API, callable on tiles), with their numpy semantics and the engine
family that runs them.

Activation functions run on ScalarE (``nki.isa.activation``; the function list
of the NKI API reference, "nki-act-func"); ALU operators on VectorE (the
"nki-aluop" list: arithmetic, comparisons that yield 1.0 or 0.0, logical and
bitwise operators).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Op:
    """An ``nl.*`` function as passed in ``op=``: ``arity`` 1 (activation) or 2."""

    name: str
    arity: int
    fn: Callable[..., np.ndarray]
    reduce: Callable[..., np.ndarray] | None = None
    # A unary op on VectorE (an ALU operator, e.g. logical_not) rather than a
    # ScalarE activation function.
    vector: bool = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"nl.{self.name} is passed as op= to an nisa call in this simulator; "
            "tile-level nl.* arithmetic is not supported"
        )

    def __repr__(self) -> str:
        return f"nl.{self.name}"


# nl.abs as an arithmetic ALU operator in a binary slot (``tensor_scalar(op0=nl.abs,
# operand0=0.0)``, as nki-samples' rmsnorm_quant @1ee7f1d writes it): the "Supported
# Math Operators for NKI ISA" table (aws-neuron-sdk nki/api/nki.api.shared.rst @4373fac)
# lists Absolute among the arithmetic operators; the result is |data|, the operand
# unused (unverified: the table gives no formula).
ALU_ABS = Op("abs", 2, lambda x, _operand: np.abs(x))


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(1.0 / np.sqrt(2.0))))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.float32(np.sqrt(2.0 / np.pi)) * (x + 0.044715 * x**3)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(np.float32(0.0), x)


def _flag(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A comparison or logical operator: 1.0 where it holds, 0.0 elsewhere."""
    return lambda *xs: fn(*xs).astype(np.float32)


def _int_op(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A bitwise operator on the integer values of its operands."""
    return lambda *xs: fn(*(np.asarray(x).astype(np.int64) for x in xs)).astype(np.float32)


OPS: Mapping[str, Op] = MappingProxyType(
    {
        op.name: op
        for op in (
            Op("add", 2, np.add, np.sum),
            Op("subtract", 2, np.subtract),
            Op("multiply", 2, np.multiply, np.prod),
            Op("divide", 2, np.divide),
            Op("maximum", 2, np.maximum, np.max),
            Op("minimum", 2, np.minimum, np.min),
            Op("power", 2, np.power),
            Op("copy", 1, lambda x: x),
            Op("exp", 1, np.exp),
            Op("log", 1, np.log),
            Op("relu", 1, lambda x: np.maximum(x, 0.0)),
            Op("rsqrt", 1, lambda x: 1.0 / np.sqrt(x)),
            Op("sqrt", 1, np.sqrt),
            Op("reciprocal", 1, lambda x: 1.0 / x),
            Op("negative", 1, np.negative),
            Op("abs", 1, np.abs),
            Op("gelu", 1, _gelu),
            Op("gelu_apprx_tanh", 1, _gelu_tanh),
            Op("silu", 1, lambda x: x * _sigmoid(x)),
            # d/dx silu(x) = sigmoid(x) (1 + x (1 - sigmoid(x))).
            Op("silu_dx", 1, lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x)))),
            # GELU with the sigmoid approximation, x sigmoid(1.702 x) (NKI 2.26 release
            # notes: "Gaussian Error Linear Unit activation function with sigmoid
            # approximation"; the constant is the approximation's usual one, unverified).
            Op("gelu_apprx_sigmoid", 1, lambda x: x * _sigmoid(np.float32(1.702) * x)),
            Op("square", 1, np.square),
            Op("tanh", 1, np.tanh),
            Op("sigmoid", 1, _sigmoid),
            Op("erf", 1, _erf),
            Op("erf_dx", 1, lambda x: 2.0 / np.sqrt(np.pi) * np.exp(-x * x)),
            Op(
                "gelu_dx",
                1,
                lambda x: (
                    0.5 * (1.0 + _erf(x / np.sqrt(2.0)))
                    + x * np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi)
                ),
            ),
            Op("softplus", 1, _softplus),
            Op("mish", 1, lambda x: x * np.tanh(_softplus(x))),
            Op("sin", 1, np.sin),
            Op("cos", 1, np.cos),
            # nki.language.tan (v2.26.1 nki.language page): an activation like sin and
            # cos; its engine (ScalarE, as theirs) is unverified.
            Op("tan", 1, np.tan),
            Op("arctan", 1, np.arctan),
            Op("sign", 1, np.sign),
            # ALU operators (VectorE): comparisons and logic yield 1.0 / 0.0.
            Op("equal", 2, _flag(np.equal)),
            Op("not_equal", 2, _flag(np.not_equal)),
            Op("greater", 2, _flag(np.greater)),
            Op("greater_equal", 2, _flag(np.greater_equal)),
            Op("less", 2, _flag(np.less)),
            Op("less_equal", 2, _flag(np.less_equal)),
            Op("logical_and", 2, _flag(np.logical_and)),
            Op("logical_or", 2, _flag(np.logical_or)),
            Op("logical_xor", 2, _flag(np.logical_xor)),
            Op("logical_not", 1, _flag(np.logical_not), vector=True),
            Op("bitwise_and", 2, _int_op(np.bitwise_and)),
            Op("bitwise_or", 2, _int_op(np.bitwise_or)),
            Op("bitwise_xor", 2, _int_op(np.bitwise_xor)),
            Op("left_shift", 2, _int_op(np.left_shift)),
            Op("right_shift", 2, _int_op(np.right_shift)),
            Op("invert", 1, _int_op(np.invert), vector=True),
            Op("mod", 2, np.mod),
            Op("fmod", 2, np.fmod),
            Op("floor", 1, np.floor, vector=True),
            Op("ceil", 1, np.ceil, vector=True),
            Op("trunc", 1, np.trunc, vector=True),
        )
    }
)


# numpy ufuncs that beta-1 kernels pass as op= (``op=np.add``), as the nl op they mean.
NUMPY_OPS: Mapping[Any, Op] = MappingProxyType(
    {
        np.add: OPS["add"],
        np.subtract: OPS["subtract"],
        np.multiply: OPS["multiply"],
        np.divide: OPS["divide"],
        np.maximum: OPS["maximum"],
        np.minimum: OPS["minimum"],
        np.power: OPS["power"],
        np.exp: OPS["exp"],
        np.log: OPS["log"],
        np.sqrt: OPS["sqrt"],
        np.reciprocal: OPS["reciprocal"],
        np.tanh: OPS["tanh"],
        np.abs: OPS["abs"],
        np.negative: OPS["negative"],
        np.square: OPS["square"],
        # Reductions passed as the operator they reduce with (loop_reduce(op=np.max)).
        np.max: OPS["maximum"],
        np.amax: OPS["maximum"],
        np.min: OPS["minimum"],
        np.amin: OPS["minimum"],
        np.sum: OPS["add"],
        np.prod: OPS["multiply"],
        np.equal: OPS["equal"],
        np.not_equal: OPS["not_equal"],
        np.greater: OPS["greater"],
        np.greater_equal: OPS["greater_equal"],
        np.less: OPS["less"],
        np.less_equal: OPS["less_equal"],
        np.logical_and: OPS["logical_and"],
        np.logical_or: OPS["logical_or"],
        np.logical_xor: OPS["logical_xor"],
        np.logical_not: OPS["logical_not"],
        np.bitwise_and: OPS["bitwise_and"],
        np.bitwise_or: OPS["bitwise_or"],
        np.bitwise_xor: OPS["bitwise_xor"],
        np.invert: OPS["invert"],
        np.mod: OPS["mod"],
        np.fmod: OPS["fmod"],
        np.sin: OPS["sin"],
        np.cos: OPS["cos"],
        np.tan: OPS["tan"],
        np.sign: OPS["sign"],
        np.arctan: OPS["arctan"],
    }
)
