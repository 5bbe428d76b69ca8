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

Any other affine access (strided ``2 * nl.arange(n)``, reversed, or taking the
tensor's axes in another order, as the transpose2d tutorial's
``out[i_p, i_f2 * n1 + i_f1]`` does) is gathered element by element: the tile
keeps every element's coordinates (``coords``) and, for dependencies and
memory, the box around them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

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
            raise _NotABox(f"{expr!r} is strided or reversed")
        run *= size
    coefs = [c for _, c, _ in by_axis]
    if coefs != sorted(coefs, reverse=True):
        raise _NotABox(f"{expr!r} runs its ranges in transposed order")
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


def _per_position(key: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[Any, int] | None]:
    """The key with each position's ranges on axes of their own, when ranges of two
    grids (or a grid and an ``nl.arange``) share an index-space axis across positions.

    The layernorm tutorial's second version indexes ``x[i_p, j * 512 + i_f]`` with
    ``i_p`` and ``i_f`` each the first range of its own ``nl.mgrid``: two variables
    that the shared index space would put on one axis. Each position then takes the
    next axes, in key order, and the map ``(grid, axis) -> new axis`` lets a mask over
    those ranges find its axis (``kernelopt.sim.masking``)."""
    owner: dict[int, tuple[int, int | None]] = {}
    collide = False
    for pos, k in enumerate(key):
        if isinstance(k, IndexExpr):
            for axis, _, _ in k.terms:
                first = owner.setdefault(axis, (pos, k.grid))
                collide = collide or (first[0] != pos and first[1] != k.grid)
    if not collide:
        return key, None
    total = sum(len(k.terms) for k in key if isinstance(k, IndexExpr))
    mapping: dict[Any, int] = {}
    placed: list[Any] = []
    for k in key:
        if isinstance(k, IndexExpr) and k.terms:
            terms = []
            for axis, coef, size in sorted(k.terms):
                mapping[(k.grid, axis)] = len(mapping)
                terms.append((mapping[(k.grid, axis)], coef, size))
            k = IndexExpr(k.const, tuple(terms), total, True)
        placed.append(k)
    return tuple(placed), mapping


def resolve(tile: Tile, key: tuple[Any, ...]) -> Tile:
    """``tile[key]`` for a key (already expanded to one entry per axis) with expressions."""
    from kernelopt.sim.tensor import Tile

    key, mapping = _per_position(key)
    if mapping is not None:
        try:
            found = _resolve(tile, key)
        except _NotABox:
            found = gather(tile, key)
        out = Tile(tile.alloc, *found)
        out.axis_map = mapping
        machine = tile.alloc.machine
        machine.placement = (machine.line(), mapping)
        return out
    sig = _signature(key)
    cache_key = None
    if sig is not None:
        cache_key = (tile.alloc.shape, tile.bounds, tile.kept, tile.loose, sig)
        hit = _RESOLVED.get(cache_key)
        if hit is not None:
            return Tile(tile.alloc, *hit)
    try:
        found = _resolve(tile, key)
    except _NotABox:
        found = gather(tile, key)
    if cache_key is not None:
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        _RESOLVED[cache_key] = found
    return Tile(tile.alloc, *found)


class _NotABox(IndexError_):
    """The access is strided, permuted or reversed: taken element by element."""


def gather(tile: Tile, key: tuple[Any, ...]) -> tuple[Any, ...]:
    """An access that is not a box: the coordinates of every element, and the box around
    them (what dependencies and memory see). On chip, logical axis 0 must still be the
    partition axis: engines move data within a partition, not across."""
    exprs = [k for k in key if isinstance(k, IndexExpr) and k.terms]
    ndim = max((e.ndim for e in exprs), default=1)
    used = {a for e in exprs for a, _, _ in e.terms}
    spare = (a for a in range(ndim + len(key)) if a not in used)
    per_axis: dict[int, Any] = {}
    for axis, k in zip(tile.kept, key, strict=True):
        lo, hi = tile.bounds[axis]
        per_axis[axis] = _as_expr(k, hi - lo, next(spare), ndim) if isinstance(k, slice) else k
    sizes: dict[int, int] = {}
    for k in per_axis.values():
        for a, _, n in k.terms if isinstance(k, IndexExpr) else ():
            if sizes.setdefault(a, n) != n:
                raise IndexError_(f"two ranges of sizes {sizes[a]} and {n} on index axis {a}")
    space = tuple(sizes.get(a, 1) for a in range(max([ndim, *(a + 1 for a in sizes)])))
    coords, bounds, kept, loose = [], list(tile.bounds), [], tile.loose
    for axis, (lo, hi) in enumerate(tile.bounds):
        k = per_axis.get(axis, 0 if axis not in tile.kept else None)
        if isinstance(k, IndexExpr):
            values = lo + _spread(k, space)
            kept.append(axis)
        else:
            values = np.full(space, lo + tile._int(k), dtype=np.int64)
        first, last = int(values.min()), int(values.max())
        loose = loose or first < lo or last >= hi
        bounds[axis] = (first, last + 1)
        coords.append(np.broadcast_to(values, space))
    if tile.alloc.buffer.on_chip and len(space) > 1:
        partition = coords[0]
        first_column = partition[(slice(None),) + (slice(0, 1),) * (len(space) - 1)]
        if (partition != first_column).any():
            tile._fail(
                f"an access to {tile.alloc.name!r} moves elements across partitions; engines "
                "read within each partition (transpose with nisa.nc_transpose)"
            )
    return tuple(bounds), tuple(kept), loose, (space, None), tuple(coords)


def loose_slices(tile: Tile, key: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A beta-1 key whose slices (``nl.ds(start, size)``) reach past the tensor, as the
    ``nl.arange`` ranges they stand for, each on the next index-space axis: like any
    range past the tensor, valid once a ``mask=`` cuts it back. nki-samples' beta-1
    neuron-team transposes (``contributed/neuron-team-kernels/transpose.py`` @6dc4ebb)
    load ``img[nl.ds(p * 128, 128), ...]`` of a 200-row tensor under a row mask. None
    when every slice is inside the tensor (a plain box)."""
    sizes = [hi - lo for lo, hi in (tile.bounds[a] for a in tile.kept)]
    spans = []
    for k, size in zip(key, sizes, strict=True):
        if isinstance(k, slice):
            start = 0 if k.start is None else tile._int(k.start)
            stop = size if k.stop is None else tile._int(k.stop)
            spans.append((start, stop, size))
    if all(0 <= start and stop <= size for start, stop, size in spans) or any(
        stop <= start for start, stop, _ in spans
    ):
        return None
    ranges, ndim = iter(range(len(spans))), len(spans)
    out = []
    for k in key:
        if isinstance(k, slice):
            axis = next(ranges)
            start, stop, _ = spans[axis]
            k = IndexExpr(start, ((axis, 1, stop - start),), ndim, True)
        out.append(k)
    return tuple(out)


def key_arrays(tile: Tile, key: tuple[Any, ...]) -> tuple[np.ndarray, ...]:
    """Per axis of ``tile`` (a view, ``tile.shape``), the positions ``key`` (one entry
    per axis: ints, unit-step slices, ``nl.arange`` expressions) reads, over the index
    space the expressions span, as ``gather`` spreads them over a tensor's axes."""
    exprs = [k for k in key if isinstance(k, IndexExpr) and k.terms]
    ndim = max((e.ndim for e in exprs), default=1)
    used = {a for e in exprs for a, _, _ in e.terms}
    spare = (a for a in range(ndim + len(key)) if a not in used)
    per_pos = [
        _as_expr(k, size, next(spare), ndim) if isinstance(k, slice) else k
        for k, size in zip(key, tile.shape, strict=True)
    ]
    sizes: dict[int, int] = {}
    for k in per_pos:
        for a, _, n in k.terms if isinstance(k, IndexExpr) else ():
            if sizes.setdefault(a, n) != n:
                raise IndexError_(f"two ranges of sizes {sizes[a]} and {n} on index axis {a}")
    space = tuple(sizes.get(a, 1) for a in range(max([ndim, *(a + 1 for a in sizes)])))
    arrays = []
    for pos, (k, size) in enumerate(zip(per_pos, tile.shape, strict=True)):
        if isinstance(k, IndexExpr):
            values = _spread(k, space)
        else:
            values = np.full(space, tile._int(k), dtype=np.int64)
        if values.min() < 0 or values.max() >= size:
            tile._fail(f"an index on axis {pos} of a view of shape {tile.shape} is out of bounds")
        arrays.append(np.broadcast_to(values, space))
    return tuple(arrays)


def indirect(tile: Tile, key: tuple[Any, ...]) -> Tile:
    """``data[idx_tile, i_f]``: an indirect (gather) access, one coordinate per partition
    read from an on-chip index tile; a DMA reads the index tile too. In a trace-only
    run the coordinates are unknown: the access is taken to span the whole axis."""
    from kernelopt.sim.tensor import Tile

    m = tile.alloc.machine
    slots = [i for i, k in enumerate(key) if isinstance(k, Tile)]
    if len(slots) != 1:
        tile._fail("an indirect access takes one index tile")
    index = key[slots[0]]
    if not index.buffer.on_chip or index.free_size != 1:
        tile._fail(f"an index tile must be an on-chip [P, 1] tile, got {index!r}")
    axis = tile.kept[slots[0]]
    lo, hi = tile.bounds[axis]
    values = m.read(index, "indirect access")
    rows = np.zeros(index.partitions, np.int64) if values is None else values.astype(np.int64)
    rows = rows.reshape(index.partitions)
    if values is not None and ((rows < 0) | (rows >= hi - lo)).any():
        tile._fail(f"an index tile holds rows outside [0, {hi - lo}) of {tile.alloc.name!r}")
    # The index tile runs along index-space axis 0 (one row per partition), in place of
    # an nl.arange(P)[:, None] the gather below then overrides with its values.
    ndim = max((k.ndim for k in key if isinstance(k, IndexExpr) and k.terms), default=2)
    placeholder = IndexExpr(0, ((0, 1, index.partitions),), ndim, True)
    ranges = tuple(placeholder if isinstance(k, Tile) else k for k in key)
    bounds, kept, loose, view, coords = gather(tile, ranges)
    space = view[0]
    column = rows.reshape((index.partitions,) + (1,) * (len(space) - 1))
    coords = list(coords)
    coords[axis] = np.broadcast_to(lo + column, space)
    bounds = list(bounds)
    first, last = (lo, hi) if values is None else (lo + int(rows.min()), lo + int(rows.max()) + 1)
    bounds[axis] = (first, last)
    kept = tuple(sorted(set(kept) | {axis}))
    return Tile(tile.alloc, tuple(bounds), kept, loose, view, tuple(coords), via=index)


def _spread(expr: IndexExpr, space: tuple[int, ...]) -> np.ndarray:
    values = np.full(space, expr.const, dtype=np.int64)
    for a, c, n in expr.terms:
        shape = [1] * len(space)
        shape[a] = n
        values = values + c * np.arange(n, dtype=np.int64).reshape(shape)
    return values


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
        raise _NotABox("the tensor axes take their index ranges in transposed order")
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
    return tuple(bounds), tuple(kept), loose, view, None


def pattern_view(
    tile: Tile, pattern: Any, offset: Any = 0, dtype: Any = None, **unsupported: Any
) -> tuple[Any, ...]:
    """``t.ap(pattern=[[step, num], ...], offset=)``: the view an access pattern reads
    (NKI access patterns deep dive, aws-neuron-sdk ``nki/deep-dives/nki-aps.rst``).

    The tensor is taken flat; element ``[i0, i1, ...]`` of the view is flat element
    ``offset + sum(i_k * step_k)``, and the view's shape is the ``num``s. On chip the
    first entry walks the partitions and its step must be the tensor's free size.
    Only a whole ``nl.ndarray`` takes an access pattern."""
    alloc = tile.alloc
    given = sorted(k for k, v in unsupported.items() if v is not None)
    if given:
        tile._fail(f".ap: {', '.join(given)} (dynamic offsets) are not simulated")
    if dtype is not None and np.dtype(dtype) != alloc.dtype:
        tile._fail(f".ap: a reinterpret cast to {dtype} is not simulated")
    whole = tile.kept == tuple(range(len(alloc.shape))) and tile.bounds == tuple(
        (0, n) for n in alloc.shape
    )
    if not whole or tile.view_map is not None or tile.coords is not None:
        tile._fail(".ap: an access pattern is taken on a whole nl.ndarray, not on a view of one")
    try:
        entries = [(int(step), int(num)) for step, num in pattern]
        start = int(offset)
    except (TypeError, ValueError):
        tile._fail(f".ap: pattern must be [[step, num], ...] of ints, got {pattern!r}")
    if not entries or any(num < 1 for _, num in entries):
        tile._fail(f".ap: pattern {pattern!r} needs at least one entry, each with num >= 1")
    flat = pattern_offsets(entries, start)
    size = int(np.prod(alloc.shape))
    if flat.min() < 0 or flat.max() >= size:
        tile._fail(
            f".ap: pattern {pattern!r} at offset {start} reads elements "
            f"[{int(flat.min())}, {int(flat.max())}] of {alloc.name!r}, which has {size}"
        )
    if alloc.buffer.on_chip:
        free = size // alloc.shape[0]
        if entries[0][1] > 1 and entries[0][0] != free:
            tile._fail(
                f".ap: on chip the first entry walks the partitions, so its step must be "
                f"the free size {free} of {alloc.name!r}, got {entries[0][0]}"
            )
    past = f".ap: pattern {pattern!r} runs past the end of a partition of {alloc.name!r}"
    return gathered(tile, flat, past)


def pattern_offsets(entries: Any, start: int) -> np.ndarray:
    """Flat element offsets an access pattern ``[[step, num], ...]`` reads from ``start``,
    in the shape of its ``num``s."""
    space = tuple(int(num) for _, num in entries)
    flat = np.full(space, start, dtype=np.int64)
    for axis, (step, num) in enumerate(entries):
        shape = [1] * len(space)
        shape[axis] = int(num)
        flat = flat + int(step) * np.arange(int(num), dtype=np.int64).reshape(shape)
    return flat


def gathered(tile: Tile, flat: np.ndarray, past_partition: str) -> tuple[Any, ...]:
    """The ``Tile`` fields (after the allocation) of a view reading ``tile``'s allocation
    at the flat offsets ``flat``, in ``flat``'s shape; on chip, every row of it must stay
    in one partition (fails with ``past_partition`` otherwise)."""
    alloc = tile.alloc
    coords = tuple(np.unravel_index(flat, alloc.shape))
    if alloc.buffer.on_chip and flat.ndim > 1:
        first = coords[0][(slice(None),) + (slice(0, 1),) * (flat.ndim - 1)]
        if (coords[0] != first).any():
            tile._fail(past_partition)
    bounds = tuple((int(c.min()), int(c.max()) + 1) for c in coords)
    return bounds, tuple(range(len(alloc.shape))), False, (flat.shape, None), coords


def as_column(source: Tile, tile: Tile) -> Tile:
    """A beta-1 on-chip tile indexed down to its partition axis (``l[:, i]``) as a
    [P, 1] column, not a 1-D tile: the public flash-attention kernel passes
    ``l_buffer[:, i]`` on and indexes it ``[:, 0]``, and uses such columns as
    activation biases. The current API and HBM tensors index as numpy does."""
    from kernelopt.sim.tensor import Tile

    if (
        tile.alloc.machine.beta1 is None
        or not tile.alloc.buffer.on_chip
        or len(tile.kept) != 1
        or len(source.kept) < 2
        or tile.kept[0] != 0
    ):
        return tile
    view = ((tile.shape[0], 1), ((0, 1), None))
    return Tile(tile.alloc, tile.bounds, tile.kept, tile.loose, view)
