"""The op classes a workload's ``f_nkigym`` is written in, one per ISA instruction.

Each op states its operand axes, which axes it reduces, the ISA tile limits on
those axes and its numpy meaning. Called on numpy arrays an op computes; called
on traced tensors it records itself (see ``trace.py``), so one ``f_nkigym``
serves both as math and as the op graph.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from kernelopt.sim.ops import NUMPY_OPS
from kernelopt.sim.ops import OPS as SIM_OPS

PMAX = 128  # partitions; also the TensorE contraction limit


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # 1 / (1 + exp(-x)) through logaddexp: exp(-x) would overflow (and warn) far below 0.
    return np.exp(-np.logaddexp(0.0, -x))


# The dtypes a kernel is rendered in (``nl.<name>``); an input of any other is refused.
DTYPES = {
    "bfloat16": "nl.bfloat16",
    "float16": "nl.float16",
    "float32": "nl.float32",
    "int32": "nl.int32",
    "float8_e4m3": "nl.float8_e4m3",
}

# Names follow ``nl.<name>``; the renderer prints ``nl.<name>`` verbatim.
BINARY_OPS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
UNARY_OPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "copy": lambda x: x,
    "exp": np.exp,
    "relu": lambda x: np.maximum(x, 0.0),
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "silu": lambda x: x * _sigmoid(x),
    "square": np.square,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
}
# The rest of ScalarE's activation functions (the NKI docs' "Supported Activation
# Functions"), with the simulator's own definitions so both sides compute the same.
UNARY_OPS.update(
    {
        name: SIM_OPS[name].fn
        for name in (
            "sqrt",
            "log",
            "reciprocal",
            "abs",
            "gelu_apprx_tanh",
            "gelu_apprx_sigmoid",
            "softplus",
            "mish",
            "erf",
            "sin",
            "cos",
            "arctan",
            "sign",
        )
    }
)
REDUCE_OPS: dict[str, Callable[..., np.ndarray]] = {
    "add": np.sum,
    "maximum": np.max,
    "minimum": np.min,
    "multiply": np.prod,
}


class OpError(ValueError):
    """An op called with operands or attributes its instruction cannot take."""


@dataclass(frozen=True)
class AxisSpec:
    """How one op lays out its operand axes.

    ``operands`` maps each tensor operand to its axis labels; ``output`` gives
    the output's labels. A label shared by operands (or operand and output) is
    the same loop dimension; labels in ``reduces`` are summed away.
    """

    operands: dict[str, tuple[str, ...]]
    output: tuple[str, ...]
    reduces: tuple[str, ...] = ()
    limits: tuple[tuple[str, int], ...] = ()
    new_axes: tuple[tuple[str, int], ...] = ()  # output labels no operand has, with sizes

    def labels(self, role: str) -> tuple[str, ...]:
        """Axis labels of an operand; a [P, 1] column shares only the partition axis."""
        if role in self.operands:
            return self.operands[role]
        return ("P", f"_{role}")


def is_tile(value: Any) -> bool:
    """A tensor (numpy array or traced tensor), as opposed to a Python number."""
    shape = getattr(value, "shape", None)
    return shape is not None and len(shape) > 0


class NKIOp:
    """Base of every op: subclasses set ``kind``, ``spec`` and ``compute``."""

    kind: ClassVar[str] = ""
    spec: ClassVar[AxisSpec]
    attr_names: ClassVar[tuple[str, ...]] = ()
    # Attributes that may be a [P, 1] tile instead of a number (the ISA's vector operands).
    column_attrs: ClassVar[tuple[str, ...]] = ()
    # The result's dtype when it is not the first operand's (a reduction accumulates in fp32).
    out_dtype: ClassVar[str | None] = None

    def __init__(self, *args: Any, **attrs: Any) -> None:
        # Positional attributes in ``attr_names`` order, as a signature would take them
        # (``NKIActivation("exp")``, ``NKITensorReduce("add", 1)``).
        if len(args) > len(self.attr_names):
            name, operands = type(self).__name__, ", ".join(self.spec.operands)
            raise OpError(
                f"{name}: takes attribute(s) {list(self.attr_names)}, got {len(args)} "
                f"positional; operands go in the call: {name}(...)({operands})"
            )
        for name, value in zip(self.attr_names, args, strict=False):
            if name in attrs:
                raise OpError(f"{type(self).__name__}: attribute {name!r} given twice")
            attrs[name] = value
        self._check_attr_names(attrs)
        self.attrs = attrs

    def _check_attr_names(self, attrs: dict[str, Any]) -> None:
        unknown = sorted(set(attrs) - set(self.attr_names))
        if unknown:
            raise OpError(
                f"{type(self).__name__}: unknown attribute(s) {unknown}; "
                f"expected some of {list(self.attr_names)}"
            )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Positional operands in the instruction's order (``data``; ``data1, data2``;
        # ``stationary, moving``), as ``square(x)`` reads.
        names = list(self.spec.operands)
        if len(args) > len(names):
            raise OpError(
                f"{type(self).__name__}: takes operand(s) {names}, got {len(args)} positional"
            )
        for name, value in zip(names, args, strict=False):
            if name in kwargs:
                raise OpError(f"{type(self).__name__}: operand {name!r} given twice")
            kwargs[name] = value
        operands = {k: kwargs.pop(k) for k in list(kwargs) if k in self.spec.operands}
        missing = [k for k in self.spec.operands if k not in operands]
        self._check_attr_names(kwargs)
        if missing:
            raise OpError(f"{type(self).__name__}: missing operand(s) {missing}")
        attrs = {**self.attrs, **kwargs}
        # A tile given as an attribute, at construction or in the call, is an operand.
        for role in self.column_attrs:
            if is_tile(attrs.get(role)):
                operands[role] = attrs.pop(role)
        self.check_attrs(attrs, tuple(r for r in self.column_attrs if r in operands))
        first = next(iter(operands.values()))
        recorder = getattr(first, "record", None)
        if recorder is not None:
            return recorder(self, operands, attrs)
        arrays = {k: np.asarray(v) for k, v in operands.items()}
        rows = arrays[next(iter(self.spec.operands))].shape[0]
        for role in self.column_attrs:
            if role in arrays and arrays[role].shape != (rows, 1):
                raise OpError(
                    f"{type(self).__name__}: {role} must be a number or a [{rows}, 1] column, "
                    f"got shape {arrays[role].shape}"
                )
        return self.compute(arrays, attrs)

    def check_attrs(self, attrs: dict[str, Any], columns: tuple[str, ...] = ()) -> None:
        """Reject attributes the instruction cannot take (overridden per op); ``columns``
        names the column attributes given as tiles (moved to the operands)."""

    def compute(self, operands: dict[str, np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        raise NotImplementedError


def _number(value: Any) -> bool:
    """A number: Python's, numpy's scalar types, or a 0-d numpy array (``np.array(0.5)``)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    return isinstance(value, int | float | np.floating | np.integer) and not isinstance(value, bool)


def column_or_number(
    operands: dict[str, np.ndarray], attrs: dict[str, Any], role: str, default: float
) -> np.ndarray | np.float32:
    """A column operand as a float32 [P, 1] array (broadcast along the free axis) or a scalar."""
    if role in operands:
        return operands[role].astype(np.float32)
    value = attrs.get(role)
    return np.float32(default if value is None else value)


# The short forms people write for the ALU operators, by the name the renderer prints.
OP_ALIASES = {
    "max": "maximum",
    "min": "minimum",
    "sum": "add",
    "prod": "multiply",
    "mul": "multiply",
    "sub": "subtract",
    "div": "divide",
}


def _op_name(value: Any, table: dict[str, Any], op: str, role: str) -> str:
    """The operator's canonical name: a string (an alias in ``OP_ALIASES`` taken to its
    target), an ``nl.*`` operator (``.name``) or a numpy function, as the simulator
    reads one (``NUMPY_OPS``: ``np.max`` is ``maximum``)."""
    numpy_op = NUMPY_OPS.get(value) if callable(value) else None
    name = numpy_op.name if numpy_op is not None else getattr(value, "name", value)
    if isinstance(name, str) and name not in table and OP_ALIASES.get(name) in table:
        name = OP_ALIASES[name]
    if not isinstance(name, str) or name not in table:
        raise OpError(f"{op}: {role}={value!r} is not one of {sorted(table)}")
    return name


class NKIMatmul(NKIOp):
    """``nc_matmul``: out[M, N] = stationary[K, M].T @ moving[K, N], fp32 in PSUM."""

    kind = "matmul"
    spec = AxisSpec(
        operands={"stationary": ("K", "M"), "moving": ("K", "N")},
        output=("M", "N"),
        reduces=("K",),
        limits=(("K", PMAX), ("M", 128), ("N", 512)),
    )

    def compute(self, operands: dict[str, np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        a = operands["stationary"].astype(np.float32)
        b = operands["moving"].astype(np.float32)
        return a.T @ b


class NKITranspose(NKIOp):
    """``nc_transpose`` on TensorE: data[P, F] -> out[F, P], both at most 128."""

    kind = "transpose"
    spec = AxisSpec(
        operands={"data": ("P", "F")},
        output=("F", "P"),
        limits=(("P", PMAX), ("F", PMAX)),
    )

    def compute(self, operands: dict[str, np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        return operands["data"].T


class NKITensorTensor(NKIOp):
    """``tensor_tensor``: elementwise ``op(data1, data2)`` on equal-shaped tiles."""

    kind = "tensor_tensor"
    spec = AxisSpec(operands={"data1": ("P", "F"), "data2": ("P", "F")}, output=("P", "F"))
    attr_names = ("op",)

    def check_attrs(self, attrs: dict[str, Any], columns: tuple[str, ...] = ()) -> None:
        if "op" not in attrs:
            raise OpError("NKITensorTensor: op= is required (e.g. op='add')")
        attrs["op"] = _op_name(attrs["op"], BINARY_OPS, "NKITensorTensor", "op")

    def compute(self, operands: dict[str, np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        fn = BINARY_OPS[attrs["op"]]
        return fn(operands["data1"].astype(np.float32), operands["data2"].astype(np.float32))


class NKITensorScalar(NKIOp):
    """``tensor_scalar``: ``op1(op0(data, operand0), operand1)``.

    Each operand is a Python number or a [P, 1] fp32 column (one value per
    partition, broadcast along the free axis, e.g. a ``NKITensorReduce``
    result); ``reverse0``/``reverse1`` swap the operands of the corresponding op.
    """

    kind = "tensor_scalar"
    spec = AxisSpec(operands={"data": ("P", "F")}, output=("P", "F"))
    attr_names = ("op0", "operand0", "reverse0", "op1", "operand1", "reverse1")
    column_attrs = ("operand0", "operand1")

    def check_attrs(self, attrs: dict[str, Any], columns: tuple[str, ...] = ()) -> None:
        for i in ("0", "1"):
            op, operand = attrs.get("op" + i), attrs.get("operand" + i)
            if op is None:
                if i == "0":
                    raise OpError("NKITensorScalar: op0= and operand0= are required")
                # None (and reverse1=False) spell "not given", as a signature's defaults do.
                given = [
                    a
                    for a in ("operand1", "reverse1")
                    if a in columns or attrs.get(a) is not None and attrs.get(a) is not False
                ]
                if given:  # dropped silently, the op computed would not be the one meant
                    raise OpError(f"NKITensorScalar: {' and '.join(given)} given without op1=")
                for a in ("op1", "operand1", "reverse1"):
                    attrs.pop(a, None)
                continue
            attrs["op" + i] = _op_name(op, BINARY_OPS, "NKITensorScalar", "op" + i)
            attrs["reverse" + i] = bool(attrs.get("reverse" + i, False))
            if ("operand" + i) not in attrs:
                if ("operand" + i) in columns:
                    continue  # a column operand, moved to the operands
                raise OpError(
                    f"NKITensorScalar: op{i}={attrs['op' + i]!r} needs operand{i}= "
                    "(a Python number or a [P, 1] tile)"
                )
            if not _number(operand):
                raise OpError(
                    f"NKITensorScalar: operand{i} must be a Python number or a [P, 1] tile, "
                    f"got {operand!r}"
                )
            attrs["operand" + i] = float(operand)

    def compute(self, operands: dict[str, np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        out = operands["data"].astype(np.float32)
        for i in ("0", "1"):
            if attrs.get("op" + i) is None:
                continue
            fn = BINARY_OPS[attrs["op" + i]]
            other = column_or_number(operands, attrs, "operand" + i, 0.0)
            out = fn(other, out) if attrs["reverse" + i] else fn(out, other)
        return out.astype(np.float32)


class NKIActivation(NKIOp):
    """``activation`` on ScalarE: ``op(data * scale + bias)``.

    ``scale`` is a number or a [P, 1] column; ``bias`` a [P, 1] column (or a
    number). Columns broadcast along the free axis, one value per partition.
    """

    kind = "activation"
    spec = AxisSpec(operands={"data": ("P", "F")}, output=("P", "F"))
    attr_names = ("op", "scale", "bias")
    column_attrs = ("bias", "scale")

    def check_attrs(self, attrs: dict[str, Any], columns: tuple[str, ...] = ()) -> None:
        if "op" not in attrs:
            raise OpError("NKIActivation: op= is required (e.g. op='gelu')")
        attrs["op"] = _op_name(attrs["op"], UNARY_OPS, "NKIActivation", "op")
        for role, default in (("scale", 1.0), ("bias", None)):
            if role not in attrs or attrs[role] is None:
                if default is None:
                    attrs.pop(role, None)
                else:
                    attrs[role] = default
                continue
            if not _number(attrs[role]):
                raise OpError(
                    f"NKIActivation: {role} must be a Python number or a [P, 1] tile, "
                    f"got {attrs[role]!r}"
                )
            attrs[role] = float(attrs[role])

    def compute(self, operands: dict[str, np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        x = operands["data"].astype(np.float32) * column_or_number(operands, attrs, "scale", 1.0)
        x = x + column_or_number(operands, attrs, "bias", 0.0)
        return UNARY_OPS[attrs["op"]](x).astype(np.float32)


class NKIReciprocal(NKIOp):
    """``reciprocal`` on VectorE: ``1 / data`` element by element, computed in fp32."""

    kind = "reciprocal"
    spec = AxisSpec(operands={"data": ("P", "F")}, output=("P", "F"))

    def compute(self, operands: dict[str, np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        return (1.0 / operands["data"].astype(np.float32)).astype(np.float32)


class NKITensorReduce(NKIOp):
    """``tensor_reduce`` along the free axis: data[P, F] -> out[P, 1].

    Only ``axis=1`` (the free axis) exists on the engines; the partition axis
    cannot be reduced by this instruction.
    """

    kind = "tensor_reduce"
    spec = AxisSpec(
        operands={"data": ("P", "F")}, output=("P", "ONE"), reduces=("F",), new_axes=(("ONE", 1),)
    )
    attr_names = ("op", "axis", "keepdims", "negate")
    out_dtype = "float32"

    def check_attrs(self, attrs: dict[str, Any], columns: tuple[str, ...] = ()) -> None:
        if "op" not in attrs:
            raise OpError("NKITensorReduce: op= is required (e.g. op='add')")
        attrs["op"] = _op_name(attrs["op"], REDUCE_OPS, "NKITensorReduce", "op")
        axis = attrs.get("axis", 1)
        if isinstance(axis, (list, tuple)) and len(axis) == 1:
            axis = axis[0]  # the ISA takes an int or a list of free axes: [1] is 1
        if axis not in (1, -1):
            raise OpError(
                f"NKITensorReduce: axis must be 1 (free axes only), got {attrs.get('axis')!r}; "
                "to reduce along axis 0 (the partition axis), reduce NKITranspose()(data=...) "
                "along axis=1 (or, for a sum, contract the rows in NKIMatmul with a ones input)"
            )
        attrs["axis"] = 1
        attrs["keepdims"] = True
        attrs["negate"] = bool(attrs.get("negate", False))

    def compute(self, operands: dict[str, np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        data = operands["data"].astype(np.float32)
        out = REDUCE_OPS[attrs["op"]](data, axis=1, keepdims=True)
        return -out if attrs["negate"] else out
