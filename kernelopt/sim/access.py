"""Beta-1 accesses: a tensor indexed with ``nl.arange`` expressions, as a box.

``x[i * 128 + nl.arange(128)[:, None], nl.arange(512)[None, :]]`` addresses a
box of ``x`` (rows ``i * 128 ..``, columns ``0 .. 512``); the shape of the tile
is the index space the expressions span, here (128, 512). An expression may
span several index-space axes as long as they nest into one contiguous run
of the tensor axis (``128 * nl.arange(8)[None, :, None] + nl.arange(128)[None,
None, :]`` reads 1,024 consecutive elements as an 8 x 128 block), and an
index-space axis no expression spans is a unit axis
(``v[nl.arange(128)[:, None], 0]`` is a (128, 1) tile). The tile keeps the
box for dependencies and data, and the index-space shape as its ``shape``;
``view_map`` says, per index-space axis, which box axis it runs along and
with what step, so that a mask on that axis can cut the box back.

Slices mixed with expressions take the index-space axes no expression uses,
in order. Integers drop their tensor axis, as in basic indexing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelopt.sim.indexing import IndexError_, IndexExpr, Term

if TYPE_CHECKING:
    from kernelopt.sim.tensor import Tile


def _as_expr(k: slice, size: int, axis: int, ndim: int) -> IndexExpr:
    if k.step not in (None, 1):
        raise IndexError_(f"slice step {k.step}: only step 1 is supported")
    start = 0 if k.start is None else int(k.start)
    stop = size if k.stop is None else int(k.stop)
    if not 0 <= start < stop <= size:
        raise IndexError_(f"out-of-bounds slice [{start}:{stop}] of an axis of size {size}")
    return IndexExpr(start, ((axis, 1, stop - start),), ndim, True)


def _run(expr: IndexExpr) -> tuple[tuple[Term, ...], int]:
    """The expression's terms in index-space order and the contiguous run they cover."""
    by_axis = tuple(sorted(expr.terms))
    run = 1
    for _, coef, size in sorted(expr.terms, key=lambda t: t[1]):
        if coef != run:
            raise IndexError_(
                f"{expr!r} does not address a contiguous run of the tensor axis "
                "(strided or reversed accesses are not supported yet)"
            )
        run *= size
    coefs = [c for _, c, _ in by_axis]
    if coefs != sorted(coefs, reverse=True):
        raise IndexError_(
            f"{expr!r} runs its ranges in transposed order; a transposed access is not a view "
            "(use nl.load_transpose2d or nisa.nc_transpose)"
        )
    return by_axis, run


# Kernels index the same way in every iteration (``v[i, j, i_p, i_f]`` with the same
# ranges): the box a key resolves to, by the tile and the key's shape, is kept.
_RESOLVED: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_RESOLVED_MAX = 1 << 14


def _signature(key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    sig: list[Any] = []
    for k in key:
        if isinstance(k, IndexExpr):
            sig.append((k.const, k.terms, k.ndim))
        elif isinstance(k, slice):
            sig.append((k.start, k.stop, k.step, None))
        elif isinstance(k, int):
            sig.append(k)
        else:
            return None
    return tuple(sig)


def resolve(tile: Tile, key: tuple[Any, ...]) -> Tile:
    """``tile[key]`` for a key (already expanded to one entry per axis) with expressions."""
    from kernelopt.sim.tensor import Tile

    sig = _signature(key)
    cache_key = None
    if sig is not None:
        cache_key = (tile.alloc.shape, tile.bounds, tile.kept, tile.loose, sig)
        hit = _RESOLVED.get(cache_key)
        if hit is not None:
            return Tile(tile.alloc, *hit)
    bounds, kept, loose, view = _resolve(tile, key)
    if cache_key is not None:
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        _RESOLVED[cache_key] = (bounds, kept, loose, view)
    return Tile(tile.alloc, bounds, kept, loose, view)


def _resolve(tile: Tile, key: tuple[Any, ...]) -> tuple[Any, ...]:
    exprs = [k for k in key if isinstance(k, IndexExpr) and k.terms]
    ndim = max((e.ndim for e in exprs), default=1)
    if any(e.ndim != ndim for e in exprs):
        shown = ", ".join(repr(e) for e in exprs)
        raise IndexError_(f"index expressions of different dimensionality: {shown}")
    used = {a for e in exprs for a, _, _ in e.terms}
    spare = (a for a in range(ndim + len(key)) if a not in used)
    bounds = list(tile.bounds)
    kept: list[int] = []
    groups: list[tuple[Term, ...]] = []
    loose = tile.loose
    for axis, k in zip(tile.kept, key, strict=True):
        lo, hi = tile.bounds[axis]
        size = hi - lo
        if isinstance(k, slice):
            k = _as_expr(k, size, next(spare), ndim)
        if isinstance(k, IndexExpr) and not k.terms:
            k = k.const
        if isinstance(k, IndexExpr):
            terms, run = _run(k)
            if k.const < 0 or k.const + run > size:
                loose = True  # valid once a mask= cuts it back
            bounds[axis] = (lo + k.const, lo + k.const + run)
            kept.append(axis)
            groups.append(terms)
            continue
        i = tile._int(k)
        if not 0 <= i < size:
            tile._fail(
                f"out-of-bounds index {i} on axis {axis} of {tile.alloc.name!r} "
                f"(axis size {size}, tile shape {tile.shape})"
            )
        bounds[axis] = (lo + i, lo + i + 1)
    order = [a for g in groups for a, _, _ in g]
    if order != sorted(set(order)):
        tile._fail(
            f"index expressions on {tile.alloc.name!r} place axes in the order {order}: "
            "a transposed access is not a view (use nl.load_transpose2d or nisa.nc_transpose)"
        )
    sizes: dict[int, int] = {}
    where: dict[int, tuple[int, int]] = {}
    for pos, group in enumerate(groups):
        for a, coef, n in group:
            sizes[a], where[a] = n, (pos, coef)
    space = max([ndim, *(a + 1 for a in order)])
    shape = tuple(sizes.get(a, 1) for a in range(space))
    view_map = tuple(where.get(a) for a in range(space))
    box = tuple(bounds[a][1] - bounds[a][0] for a in kept)
    plain = shape == box and all(m == (i, 1) for i, m in enumerate(view_map))
    view = None if plain else (shape, view_map)
    return tuple(bounds), tuple(kept), loose, view
