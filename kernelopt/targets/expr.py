"""Safe evaluation of a program's correctness expression, e.g. ``err < 1e-6``.

The expression comes from a program file, so it is treated as untrusted: it is
parsed with :mod:`ast` and walked by a small interpreter that knows only column
names, literals, comparisons, ``and``/``or``/``not``, arithmetic and the calls
``abs``/``min``/``max``. Nothing is ever handed to ``eval``; attribute access,
subscripts, lambdas, comprehensions and every other call are rejected when the
expression is parsed, so a bad program fails before anything runs.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_LENGTH = 1000
# The evaluator recurses once per level; a bound far below Python's recursion
# limit keeps ``- - - ... x`` an error when parsed, not a crash when evaluated.
MAX_DEPTH = 50

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
# No power operator: ``9 ** 9 ** 9`` would hang the runner.
_ARITH: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {"abs": abs, "min": min, "max": max}
_CONSTANT_NAMES = {"nan": math.nan, "inf": math.inf}


class ExpressionError(ValueError):
    """The expression is not in the allowed subset, or cannot be evaluated on a row."""


@dataclass(frozen=True)
class Expression:
    """A parsed, validated expression; ``names`` are the columns it reads."""

    text: str
    names: frozenset[str]
    tree: ast.Expression = field(repr=False, compare=False)

    def evaluate(self, row: Mapping[str, Any]) -> Any:
        return _Evaluator(row, self.text).visit(self.tree.body)

    def holds(self, row: Mapping[str, Any]) -> bool:
        return bool(self.evaluate(row))


def parse_expression(text: str) -> Expression:
    """Parse and validate ``text``; raises ExpressionError saying what is not allowed."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("expression must be a non-empty string")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"invalid expression {text!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression {text!r} is nested too deeply") from None
    if _depth(tree) > MAX_DEPTH:
        raise ExpressionError(f"expression too deeply nested (more than {MAX_DEPTH} levels)")
    names: set[str] = set()
    for node in ast.walk(tree):
        _check_node(node, text)
        if isinstance(node, ast.Name) and node.id not in _FUNCTIONS:
            names.add(node.id)
    return Expression(text=text, names=frozenset(names - set(_CONSTANT_NAMES)), tree=tree)


def _depth(tree: ast.AST) -> int:
    """How deeply ``tree`` nests, counted without recursion."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _check_node(node: ast.AST, text: str) -> None:
    allowed = (
        ast.Expression,
        ast.BoolOp,
        ast.And,
        ast.Or,
        ast.UnaryOp,
        ast.Not,
        ast.USub,
        ast.UAdd,
        ast.BinOp,
        ast.Compare,
        ast.Name,
        ast.Load,
        ast.Constant,
        ast.Call,
        *_COMPARE,
        *_ARITH,
    )
    if not isinstance(node, allowed):
        raise ExpressionError(
            f"{type(node).__name__} is not allowed in expression {text!r} "
            "(allowed: column names, numbers, comparisons, and/or/not, + - * / // %, "
            "abs/min/max)"
        )
    if isinstance(node, ast.Constant) and not isinstance(node.value, int | float | str | bool):
        raise ExpressionError(f"constant {node.value!r} is not allowed in expression {text!r}")
    if isinstance(node, ast.Call):
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in _FUNCTIONS):
            raise ExpressionError(
                f"only abs(), min() and max() may be called in expression {text!r}"
            )
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args) or not node.args:
            raise ExpressionError(f"{func.id}() takes plain positional arguments in {text!r}")


def _number(value: Any, text: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExpressionError(f"arithmetic on non-number {value!r} in expression {text!r}")
    return value


class _Evaluator:
    def __init__(self, row: Mapping[str, Any], text: str) -> None:
        self.row = row
        self.text = text

    def visit(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node)
        if isinstance(node, ast.UnaryOp):
            value = self.visit(node.operand)
            if isinstance(node.op, ast.Not):
                return not value
            value = _number(value, self.text)
            return -value if isinstance(node.op, ast.USub) else +value
        if isinstance(node, ast.BinOp):
            left = _number(self.visit(node.left), self.text)
            right = _number(self.visit(node.right), self.text)
            try:
                return _ARITH[type(node.op)](left, right)
            except ZeroDivisionError:
                raise ExpressionError(f"division by zero in expression {self.text!r}") from None
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Call):
            assert isinstance(node.func, ast.Name)
            args = [_number(self.visit(a), self.text) for a in node.args]
            return _FUNCTIONS[node.func.id](*args)
        raise ExpressionError(f"{type(node).__name__} is not allowed in {self.text!r}")

    def _name(self, name: str) -> Any:
        if name in self.row:
            return self.row[name]
        if name in _CONSTANT_NAMES:
            return _CONSTANT_NAMES[name]
        if name in _FUNCTIONS:
            raise ExpressionError(f"{name} must be called, in expression {self.text!r}")
        columns = ", ".join(sorted(map(str, self.row))) or "none"
        raise ExpressionError(
            f"expression {self.text!r} uses {name!r}, which is not a result column "
            f"(columns: {columns})"
        )

    def _boolop(self, node: ast.BoolOp) -> Any:
        value: Any = None
        for operand in node.values:
            value = self.visit(operand)
            # Short-circuit exactly like Python so "n > 0 and err / n < 1" is safe.
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def _compare(self, node: ast.Compare) -> bool:
        left = self.visit(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.visit(comparator)
            try:
                if not _COMPARE[type(op)](left, right):
                    return False
            except TypeError:
                raise ExpressionError(
                    f"cannot compare {left!r} with {right!r} in expression {self.text!r}"
                ) from None
            left = right
        return True
