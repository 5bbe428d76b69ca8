"""Beta-1 index expressions: ``nl.arange``, ``nl.mgrid`` and the masks built from them.

In the ``neuronxcc.nki`` API a tile is addressed with affine expressions
over iota ranges: ``a[i * 128 + nl.arange(128)[:, None], nl.arange(512)[None, :]]``.
An expression here is ``const + sum(coef * k_axis)`` where each ``k_axis``
runs over ``range(size)`` on one axis of an ``ndim``-axis index space
(``nl.arange(n)[:, None]`` puts its range on axis 0 of two). Integers shift
and scale it; two expressions add term by term.

Used to index a tensor axis, an expression must address a contiguous run
of it: one term with coefficient 1, or several whose coefficients nest
(``128 * nl.arange(8)[None, :, None] + nl.arange(128)[None, None, :]``
covers 1,024 consecutive elements as an 8 x 128 block). Strides, reversed
or repeated elements are reported, not approximated: the simulator keeps
every tile a box of its allocation (``kernelopt.sim.access``).

A comparison is a mask. One with a single range (``t * 128 + i_p < n``,
``-1 * i_f + 10943 >= 0``) keeps an interval of that index-space axis and
can cut an access back; one over several ranges (``i_q - i_k >= 0``, a
causal predicate) is kept as a predicate that ``nisa.affine_select`` and
``nl.where`` evaluate element by element.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any

import numpy as np

Term = tuple[int, int, int]  # (index-space axis, coefficient, size)


# Grid identities (IndexExpr.grid): one per nl.mgrid call; MIXED for a sum over two.
_GRIDS = itertools.count()
MIXED = -1


def _joined(a: int | None, b: int | None) -> int | None:
    """The grid of a sum of expressions over grids ``a`` and ``b``."""
    if a is None or a == b:
        return b
    return a if b is None else MIXED


class IndexError_(ValueError):
    """An index expression the simulator cannot represent as a box."""


def _int(value: Any, what: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise IndexError_(f"{what}: {value!r} is not an integer") from None


class IndexExpr:
    """``const + sum(coef * k)`` over the index-space axes named in ``terms``."""

    __slots__ = ("const", "terms", "ndim", "placed", "grid", "dynamic")

    def __init__(
        self,
        const: int,
        terms: tuple[Term, ...],
        ndim: int,
        placed: bool,
        grid: int | None = None,
        dynamic: Any = None,
    ) -> None:
        self.const, self.terms, self.ndim, self.placed = const, terms, ndim, placed
        # The nl.mgrid call the ranges come from (None for nl.arange, MIXED for a sum
        # over two grids): ranges of two grids on one axis are different variables.
        self.grid = grid
        # A dynamic offset (``i_f + offset_tile[0, j]``): the one-element on-chip tile
        # whose value, read when the expression is built, is in ``const``.
        self.dynamic = dynamic

    def __repr__(self) -> str:
        parts = [f"{c}*k{a}[{n}]" for a, c, n in self.terms]
        return f"IndexExpr({' + '.join(parts + [str(self.const)])} in {self.ndim}-D)"

    # --- the single-range view older code relies on -----------------------------------

    @property
    def start(self) -> int:
        return self.const

    @property
    def size(self) -> int:
        return int(np.prod([n for _, _, n in self.terms])) if self.terms else 1

    @property
    def axis(self) -> int:
        return self.terms[0][0] if self.terms else 0

    @property
    def shape(self) -> tuple[int, ...]:
        sizes = dict.fromkeys(range(self.ndim), 1)
        for a, _, n in self.terms:
            sizes[a] = n
        return tuple(sizes[a] for a in range(self.ndim))

    def values(self, shape: tuple[int, ...] | None = None) -> np.ndarray:
        """The expression's value at every point of its index space (or of ``shape``)."""
        out = np.full(shape or self.shape, self.const, dtype=np.int64)
        for a, c, n in self.terms:
            idx = [1] * out.ndim
            idx[a] = n
            out = out + c * np.arange(n, dtype=np.int64).reshape(idx)
        return out

    # --- placement and arithmetic -----------------------------------------------------

    def __getitem__(self, key: Any) -> IndexExpr:
        # nl.arange(n)[:, None] / [None, :]: place the range on one axis.
        key = key if isinstance(key, tuple) else (key,)
        slices = [i for i, k in enumerate(key) if isinstance(k, slice)]
        if (
            self.placed
            or len(self.terms) != 1
            or len(slices) != 1
            or any(k is not None for i, k in enumerate(key) if i != slices[0])
        ):
            raise IndexError_(
                f"index expressions are placed with [:, None] or [None, :], got {key!r}"
            )
        if key[slices[0]] != slice(None):
            raise IndexError_(f"slicing an nl.arange is not supported, got {key[slices[0]]!r}")
        (_, coef, size) = self.terms[0]
        return IndexExpr(self.const, ((slices[0], coef, size),), len(key), True, None, self.dynamic)

    def _combine(self, other: IndexExpr) -> IndexExpr:
        if self.terms and other.terms and self.ndim != other.ndim:
            raise IndexError_(
                f"index expressions over {self.ndim}-D and {other.ndim}-D index spaces "
                "do not add; place every range with the same number of axes"
            )
        merged: dict[int, tuple[int, int]] = {}
        for a, c, n in self.terms + other.terms:
            if a in merged:
                c0, n0 = merged[a]
                if n0 != n:
                    raise IndexError_(f"two ranges of sizes {n0} and {n} on index axis {a}")
                c += c0
            merged[a] = (c, n)
        terms = tuple((a, c, n) for a, (c, n) in sorted(merged.items()) if c != 0)
        ndim = max(self.ndim, other.ndim)
        grid = _joined(self.grid if self.terms else None, other.grid if other.terms else None)
        if self.dynamic is not None and other.dynamic is not None:
            raise IndexError_("an index expression takes one dynamic offset")
        placed = self.placed or other.placed
        dynamic = self.dynamic if self.dynamic is not None else other.dynamic
        return IndexExpr(self.const + other.const, terms, ndim, placed, grid, dynamic)

    def _lift(self, other: Any, what: str) -> IndexExpr:
        if isinstance(other, IndexExpr):
            return other
        if hasattr(other, "alloc") and hasattr(other, "kept"):
            return dynamic_offset(other, self.ndim)
        return IndexExpr(_int(other, what), (), self.ndim, False)

    def __add__(self, other: Any) -> IndexExpr:
        if isinstance(other, int):  # the common case, kept cheap: i * 128 + i_p
            return IndexExpr(
                self.const + other, self.terms, self.ndim, self.placed, self.grid, self.dynamic
            )
        return self._combine(self._lift(other, "index offset"))

    __radd__ = __add__

    def __sub__(self, other: Any) -> IndexExpr:
        return self._combine(self._lift(other, "index offset") * -1)

    def __rsub__(self, other: Any) -> IndexExpr:
        return (self * -1)._combine(self._lift(other, "index offset"))

    def __neg__(self) -> IndexExpr:
        return self * -1

    def __mul__(self, other: Any) -> IndexExpr:
        if isinstance(other, IndexExpr):
            raise IndexError_("the product of two nl.arange ranges is not an affine expression")
        k = _int(other, "index coefficient")
        if self.dynamic is not None and k != 1:
            raise IndexError_("a dynamic offset is added to an index expression, not scaled")
        terms = tuple((a, c * k, n) for a, c, n in self.terms if c * k != 0)
        return IndexExpr(self.const * k, terms, self.ndim, self.placed, self.grid, self.dynamic)

    __rmul__ = __mul__

    # --- comparisons: masks -------------------------------------------------------------

    def _at_least_zero(self) -> Mask:
        """The mask of ``self >= 0``."""
        if not self.terms:
            keep = {} if self.const >= 0 else {0: (0, 0)}
            return Mask(self.ndim, keep)
        if len(self.terms) > 1:
            return Mask(self.ndim, {}, preds=(self,))
        (a, c, n) = self.terms[0]
        if c > 0:
            lo, hi = -(self.const // c), n  # k >= ceil(-const / c)
        else:
            lo, hi = 0, self.const // -c + 1  # k <= floor(const / -c)
        lo, hi = max(lo, 0), min(hi, n)
        return Mask(self.ndim, {a: (lo, max(lo, hi))}, grids={a: self.grid})

    def __ge__(self, other: Any) -> Mask:
        return (self - other)._at_least_zero()

    def __gt__(self, other: Any) -> Mask:
        return (self - other - 1)._at_least_zero()

    def __le__(self, other: Any) -> Mask:
        return (self._lift(other, "mask bound") - self)._at_least_zero()

    def __lt__(self, other: Any) -> Mask:
        return (self._lift(other, "mask bound") - self - 1)._at_least_zero()


def dynamic_offset(tile: Any, ndim: int) -> IndexExpr:
    """``i_f + offset_tile[0, j]``: the value of a one-element on-chip tile as an index
    offset, read now (the simulator runs in program order; a trace-only run reads 0).
    The nki.isa.tensor_copy_dynamic_src/dst pages (v2.26.1): "The dynamic offset must be
    a scalar value resided in SBUF"."""
    if not tile.buffer.on_chip or int(np.prod(tile.shape)) != 1:
        raise IndexError_(
            f"a dynamic index offset must be a one-element on-chip tile, got {tile.shape} "
            f"in {tile.buffer.kind.upper()}"
        )
    values = tile.alloc.machine.read(tile, "dynamic index offset")
    offset = 0 if values is None else int(np.asarray(values).reshape(-1)[0])
    return IndexExpr(offset, (), ndim, False, None, tile)


def dynamic_free_indices(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """An on-chip tile indexed on a free axis by a one-element on-chip tile
    (``t[ix, off[0, j], iz]``, the v2.2x tensor_copy_dynamic_src page's second example):
    the tile's value is a dynamic offset there, as ``0 + off[0, j]`` would be."""
    exprs = [k for k in key if isinstance(k, IndexExpr) and k.terms]
    ndim = max((e.ndim for e in exprs), default=len(key))
    return tuple(
        dynamic_offset(k, ndim) if pos > 0 and _one_element_on_chip(k) else k
        for pos, k in enumerate(key)
    )


def _one_element_on_chip(value: Any) -> bool:
    if not (hasattr(value, "alloc") and hasattr(value, "kept")):
        return False  # not a tile
    return bool(value.buffer.on_chip) and int(np.prod(value.shape)) == 1


class Mask:
    """Where a beta-1 predicate holds: per index-space axis an interval ``keep[axis]``,
    and, for predicates over several ranges, ``preds`` (each expression >= 0) and
    ``alternatives`` (``a | b``). Only an interval mask can cut an access back."""

    __slots__ = ("ndim", "keep", "preds", "alternatives", "grids")

    def __init__(
        self,
        ndim: int,
        keep: dict[int, tuple[int, int]],
        preds: tuple[IndexExpr, ...] = (),
        alternatives: tuple[Mask, ...] = (),
        grids: dict[int, int | None] | None = None,
    ) -> None:
        self.ndim, self.keep, self.preds, self.alternatives = ndim, keep, preds, alternatives
        # Per kept axis, the grid of the range it bounds (IndexExpr.grid).
        self.grids = grids or {}

    def __and__(self, other: Any) -> Mask:
        if not isinstance(other, Mask):
            raise IndexError_(f"a mask combines with another mask, got {other!r}")
        keep = dict(self.keep)
        for axis, (lo, hi) in other.keep.items():
            if axis in keep:
                lo, hi = max(lo, keep[axis][0]), min(hi, keep[axis][1])
            keep[axis] = (lo, max(lo, hi))
        alternatives = self.alternatives + other.alternatives
        grids = dict(self.grids)
        for axis, grid in other.grids.items():
            grids[axis] = grid if grids.get(axis, grid) == grid else MIXED
        ndim = max(self.ndim, other.ndim)
        return Mask(ndim, keep, self.preds + other.preds, alternatives, grids)

    def __or__(self, other: Any) -> Mask:
        if not isinstance(other, Mask):
            raise IndexError_(f"a mask combines with another mask, got {other!r}")
        return Mask(max(self.ndim, other.ndim), {}, (), (_Either(self, other),))

    def __repr__(self) -> str:
        return f"Mask({self.keep}{', preds' if self.preds or self.alternatives else ''})"

    @property
    def is_box(self) -> bool:
        return not self.preds and not self.alternatives

    def empty(self) -> bool:
        return any(hi <= lo for lo, hi in self.keep.values())

    def evaluate(self, shape: tuple[int, ...]) -> np.ndarray:
        """The predicate at every point of an index space of ``shape``."""
        ok = np.ones(shape, dtype=bool)
        for axis, (lo, hi) in self.keep.items():
            if axis < len(shape):
                k = np.arange(shape[axis])
                idx = [1] * len(shape)
                idx[axis] = shape[axis]
                ok &= ((k >= lo) & (k < hi)).reshape(idx)
        for expr in self.preds:
            ok &= _spread(expr.values(), shape) >= 0
        for alt in self.alternatives:
            ok &= alt.evaluate(shape)
        return ok


class _Either(Mask):
    """``a | b``."""

    def __init__(self, a: Mask, b: Mask) -> None:
        super().__init__(max(a.ndim, b.ndim), {})
        self.a, self.b = a, b

    def evaluate(self, shape: tuple[int, ...]) -> np.ndarray:
        return self.a.evaluate(shape) | self.b.evaluate(shape)


def _spread(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """An index-space array broadcast over a tile of ``shape`` (axes aligned from the
    partition axis, as beta-1 index spaces are)."""
    if values.ndim > len(shape):
        raise IndexError_(f"a {values.ndim}-D predicate does not fit a tile of shape {shape}")
    values = values.reshape(values.shape + (1,) * (len(shape) - values.ndim))
    try:
        return np.broadcast_to(values, shape)
    except ValueError:
        raise IndexError_(
            f"a predicate over {values.shape} does not fit a tile of shape {shape}"
        ) from None


def arange(start: int, stop: int | None = None) -> IndexExpr:
    """``nl.arange(n)`` or ``nl.arange(start, stop)``: a 1-D range, placed by indexing."""
    if stop is None:
        start, stop = 0, start
    start, stop = _int(start, "nl.arange"), _int(stop, "nl.arange")
    if stop <= start:
        raise IndexError_(f"nl.arange({start}, {stop}) is empty")
    return IndexExpr(start, ((0, 1, stop - start),), 1, False)


class Grid(tuple):
    """What ``nl.mgrid[...]`` returns: one expression per axis, also named ``.p``,
    ``.x``, ``.y``, ``.z`` for axes 0 to 3 (the nki-samples select-and-scatter kernel
    reads a 4-D grid's window as ``w.p, w.x, w.y, w.z``)."""

    def _axis(self, i: int, name: str) -> IndexExpr:
        if i >= len(self):
            raise IndexError_(f"a {len(self)}-D nl.mgrid has no .{name}")
        return self[i]

    @property
    def p(self) -> IndexExpr:
        return self._axis(0, "p")

    @property
    def x(self) -> IndexExpr:
        return self._axis(1, "x") if len(self) > 1 else self[0]

    @property
    def y(self) -> IndexExpr:
        return self._axis(2, "y")

    @property
    def z(self) -> IndexExpr:
        return self._axis(3, "z")


class _Mgrid:
    """``nl.mgrid[a:b, c:d, ...]``: one expression per range.

    A range of one value past the first two axes spans no axis of the tiles it
    indexes: it is its constant. The public rmsnorm and layernorm tutorials index
    2-D tensors with two ranges of a 3-D grid, one of them ``0:1``
    (``ix, iw, iy = nl.mgrid[0:128, 0:1, 0:n]``; ``a[ix, iy]``, ``g[iw, iy]``), then
    sum the first over ``axis=[1]`` and broadcast the second to ``(128, n)``, which
    holds only if both tiles are 2-D. A 2-D grid keeps its unit range as an axis:
    ``nl.mgrid[0:128, 0:1]`` indexes [P, 1] columns."""

    def __getitem__(self, key: Any) -> Grid:
        key = key if isinstance(key, tuple) else (key,)
        ranges = []
        for k in key:
            if not isinstance(k, slice) or k.step not in (None, 1) or k.stop is None:
                raise IndexError_(f"nl.mgrid takes start:stop ranges, got {k!r}")
            start = 0 if k.start is None else _int(k.start, "nl.mgrid")
            stop = _int(k.stop, "nl.mgrid")
            if stop <= start:
                raise IndexError_(f"nl.mgrid range {start}:{stop} is empty")
            ranges.append((start, stop - start))
        axes = list(range(len(ranges)))
        for i in reversed(range(len(ranges))):
            if len(axes) > 2 and ranges[i][1] == 1:
                axes.remove(i)
        grid = next(_GRIDS)
        exprs = [
            IndexExpr(start, ((axes.index(i), 1, size),), len(axes), True, grid)
            if i in axes
            else IndexExpr(start, (), len(axes), True, grid)
            for i, (start, size) in enumerate(ranges)
        ]
        return Grid(exprs)


mgrid = _Mgrid()
