"""Beta-1 index expressions: ``nl.arange``, ``nl.mgrid`` and the masks built from them.

In the ``neuronxcc.nki`` API a tile is addressed with affine expressions
over iota ranges: ``a[i * 128 + nl.arange(128)[:, None], nl.arange(512)[None, :]]``.
The simulator keeps every tile a box of its allocation, so an expression
is one stride-1 range (``start`` .. ``start + size``) placed on one axis
(``axis``) of an ``ndim``-axis index space; integers shift it. A
comparison of an expression with an integer is a mask: per index-space
axis, the positions ``[lo, hi)`` it keeps. Anything else (a stride, a
product of two ranges) is reported, not approximated.
"""

from __future__ import annotations

import operator
from typing import Any


class IndexError_(ValueError):
    """An index expression the simulator cannot represent as a box."""


def _int(value: Any, what: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise IndexError_(f"{what}: {value!r} is not an integer") from None


class IndexExpr:
    """``start + k`` for k in ``range(size)``, on axis ``axis`` of an ``ndim``-D index space."""

    __slots__ = ("start", "size", "axis", "ndim")

    def __init__(self, start: int, size: int, axis: int = 0, ndim: int = 1) -> None:
        self.start, self.size, self.axis, self.ndim = start, size, axis, ndim

    def __repr__(self) -> str:
        return f"IndexExpr({self.start}+[0:{self.size}] on axis {self.axis} of {self.ndim})"

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.size if a == self.axis else 1 for a in range(self.ndim))

    def __getitem__(self, key: Any) -> IndexExpr:
        # nl.arange(n)[:, None] / [None, :]: place the range on one axis.
        key = key if isinstance(key, tuple) else (key,)
        slices = [i for i, k in enumerate(key) if isinstance(k, slice)]
        if (
            self.ndim != 1
            or len(slices) != 1
            or any(k is not None for i, k in enumerate(key) if i != slices[0])
        ):
            raise IndexError_(
                f"index expressions are placed with [:, None] or [None, :], got {key!r}"
            )
        whole = key[slices[0]]
        if whole != slice(None):
            raise IndexError_(f"slicing an nl.arange is not supported, got {whole!r}")
        return IndexExpr(self.start, self.size, slices[0], len(key))

    def _shift(self, other: Any, sign: int) -> IndexExpr:
        if isinstance(other, IndexExpr):
            raise IndexError_(
                "the sum of two nl.arange ranges is not a box; index with one range per axis"
            )
        return IndexExpr(
            self.start + sign * _int(other, "index offset"), self.size, self.axis, self.ndim
        )

    def __add__(self, other: Any) -> IndexExpr:
        return self._shift(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Any) -> IndexExpr:
        return self._shift(other, -1)

    def __mul__(self, other: Any) -> IndexExpr:
        if _int(other, "index stride") != 1:
            raise IndexError_(
                f"strided index expressions (nl.arange * {other}) are not supported yet"
            )
        return self

    __rmul__ = __mul__

    def _mask(self, lo: int, hi: int) -> Mask:
        # Positions k with lo <= start + k < hi, clipped to the range.
        first = max(0, lo - self.start)
        last = min(self.size, hi - self.start)
        return Mask(self.ndim, {self.axis: (first, max(first, last))})

    def __lt__(self, other: Any) -> Mask:
        return self._mask(-(1 << 62), _int(other, "mask bound"))

    def __le__(self, other: Any) -> Mask:
        return self._mask(-(1 << 62), _int(other, "mask bound") + 1)

    def __gt__(self, other: Any) -> Mask:
        return self._mask(_int(other, "mask bound") + 1, 1 << 62)

    def __ge__(self, other: Any) -> Mask:
        return self._mask(_int(other, "mask bound"), 1 << 62)


class Mask:
    """A conjunction of range conditions: per index-space axis, positions [lo, hi)."""

    __slots__ = ("ndim", "keep")

    def __init__(self, ndim: int, keep: dict[int, tuple[int, int]]) -> None:
        self.ndim, self.keep = ndim, keep

    def __and__(self, other: Any) -> Mask:
        if not isinstance(other, Mask):
            raise IndexError_(f"a mask combines with another mask, got {other!r}")
        keep = dict(self.keep)
        for axis, (lo, hi) in other.keep.items():
            if axis in keep:
                lo, hi = max(lo, keep[axis][0]), min(hi, keep[axis][1])
            keep[axis] = (lo, max(lo, hi))
        return Mask(max(self.ndim, other.ndim), keep)

    def __repr__(self) -> str:
        return f"Mask({self.keep})"

    def empty(self) -> bool:
        return any(hi <= lo for lo, hi in self.keep.values())


def arange(start: int, stop: int | None = None) -> IndexExpr:
    """``nl.arange(n)`` or ``nl.arange(start, stop)``: a 1-D range, placed by indexing."""
    if stop is None:
        start, stop = 0, start
    start, stop = _int(start, "nl.arange"), _int(stop, "nl.arange")
    if stop <= start:
        raise IndexError_(f"nl.arange({start}, {stop}) is empty")
    return IndexExpr(start, stop - start)


class Grid(tuple):
    """What ``nl.mgrid[...]`` returns: one expression per axis; ``.p``/``.x`` for 2-D."""

    @property
    def p(self) -> IndexExpr:
        return self[0]

    @property
    def x(self) -> IndexExpr:
        return self[-1]


class _Mgrid:
    def __getitem__(self, key: Any) -> Grid:
        key = key if isinstance(key, tuple) else (key,)
        exprs = []
        for axis, k in enumerate(key):
            if not isinstance(k, slice) or k.step not in (None, 1) or k.stop is None:
                raise IndexError_(f"nl.mgrid takes start:stop ranges, got {k!r}")
            start = 0 if k.start is None else _int(k.start, "nl.mgrid")
            stop = _int(k.stop, "nl.mgrid")
            if stop <= start:
                raise IndexError_(f"nl.mgrid range {start}:{stop} is empty")
            exprs.append(IndexExpr(start, stop - start, axis, len(key)))
        return Grid(exprs)


mgrid = _Mgrid()
