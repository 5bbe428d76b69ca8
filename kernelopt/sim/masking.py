"""Beta-1 ``mask=`` on a tile: the box it cuts, the predicates that hold on the whole
tile, and the padding predicates a reduction drops elements for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim.indexing import IndexError_, Mask

if TYPE_CHECKING:
    from kernelopt.sim.tensor import Tile


def clip(tile: Tile, mask: Mask | None) -> Tile:
    """The part of ``tile`` a beta-1 ``mask=`` keeps (index-space axis i is the
    tile's axis i)."""
    from kernelopt.sim.tensor import Tile

    if mask is None:
        return tile.checked()
    if not isinstance(mask, Mask):
        tile._fail(f"mask must be built from nl.arange/nl.mgrid comparisons, got {mask!r}")
    if mask.grids:
        mapping = tile.axis_map if tile.axis_map is not None else _statement_map(tile, mask)
        if mapping is not None:
            mask = _placed(tile, mask, mapping)
    if not mask.is_box:
        # A predicate over several ranges (``512 * i_p + i_f < n``: a flat bound on a
        # tile of a longer tensor) that holds on the whole tile cuts nothing.
        if not _holds_everywhere(tile, mask):
            tile._fail(
                f"mask {mask!r} relates several index ranges and is false on part of "
                f"{tile.alloc.name!r}, which does not cut a tile to a box; use "
                "nisa.affine_select or nl.where for such a predicate"
            )
        return tile.checked()
    if mask.empty():
        tile._fail(f"mask {mask!r} keeps no element of {tile.alloc.name!r}")
    if tile.coords is not None:
        return _clip_gathered(tile, mask)
    bounds = list(tile.bounds)
    shape = list(tile.shape)
    vmap = tile.view_map
    for axis, (lo, hi) in mask.keep.items():
        if axis >= len(shape):
            continue
        lo, hi = max(lo, 0), min(hi, shape[axis])
        if lo == 0 and hi == shape[axis]:
            continue
        if hi <= lo:
            tile._fail(f"mask {mask!r} keeps no element of {tile.alloc.name!r}")
        pos, step = (axis, 1) if vmap is None else (vmap[axis] or (None, 1))
        outer = vmap is not None and any(
            m is not None and m[0] == pos and m[1] > step and shape[b] > 1
            for b, m in enumerate(vmap)
        )
        if pos is None or outer:
            tile._fail(f"mask {mask!r} cuts an inner range of a nested access to {tile!r}")
        real = tile.kept[pos]
        start = bounds[real][0]
        bounds[real] = (start + lo * step, start + hi * step)
        shape[axis] = hi - lo
    view = None if vmap is None else (tuple(shape), vmap)
    return Tile(tile.alloc, tuple(bounds), tile.kept, tile.loose, view).checked()


def _holds_everywhere(tile: Tile, mask: Mask) -> bool:
    try:
        return bool(mask.evaluate(tuple(tile.shape)).all())
    except IndexError_:
        return False


def _clip_gathered(tile: Tile, mask: Mask) -> Tile:
    from kernelopt.sim.tensor import Tile

    cut = tuple(slice(*mask.keep[a]) if a in mask.keep else slice(None) for a in range(tile.ndim))
    coords = tuple(c[cut] for c in tile.coords)
    bounds = tuple((int(c.min()), int(c.max()) + 1) for c in coords)
    view = (coords[0].shape, None)
    return Tile(tile.alloc, bounds, tile.kept, tile.loose, view, coords, tile.via).checked()


def predicated(tile: Tile, mask: Any, fill: float) -> Tile:
    """A gathered access under a predicate over several ranges (the contributed max-pool
    kernel's ``stride * i1 - padding + i3 >= 0 & ...`` padding bounds) for a reduction:
    the elements it drops read as ``fill``, the reduction's identity, so they drop out
    of the result; they may lie past the tensor, as padding does. The hardware reads
    only the kept elements; the time is charged for the whole tile."""
    from kernelopt.sim.tensor import Tile

    if tile.coords is None:
        tile._fail(
            f"mask {mask!r} relates several index ranges; on a plain view it does not cut a "
            "box (use nisa.affine_select for such a predicate)"
        )
    try:
        held = np.broadcast_to(mask.evaluate(tuple(tile.shape)), tile.shape)
    except IndexError_ as err:
        tile._fail(str(err))
    if not held.any():
        tile._fail(f"mask {mask!r} keeps no element of {tile.alloc.name!r}")
    coords, bounds = [], list(tile.bounds)
    for axis, c in zip(tile.kept, tile.coords, strict=True):
        size = tile.alloc.shape[axis]
        kept = c[held]
        if kept.min() < 0 or kept.max() >= size:
            tile._fail(
                f"mask {mask!r} keeps elements past axis {axis} of {tile.alloc.name!r} "
                f"(size {size})"
            )
        c = np.where(held, c, np.clip(c, 0, size - 1))
        coords.append(c)
        bounds[axis] = (int(c.min()), int(c.max()) + 1)
    out = Tile(tile.alloc, tuple(bounds), tile.kept, False, (tile.shape, None), tuple(coords))
    out.holes = (~held, fill)
    return out


def _statement_map(tile: Tile, mask: Mask) -> dict[Any, int] | None:
    """The placement of the access this statement placed per position, when ``mask``
    bounds its ranges: a tile the statement makes for that access (a load's
    destination) has the access's axes."""
    machine = tile.alloc.machine
    recent = machine.placement
    if recent is None or recent[0] != machine.line():
        return None
    if not all((mask.grids.get(axis), axis) in recent[1] for axis in mask.keep):
        return None
    return recent[1]


def _placed(tile: Tile, mask: Mask, mapping: dict[Any, int]) -> Mask:
    """A mask over the ranges of an access placed per key position, on its axes."""
    if not mask.is_box:
        tile._fail(f"mask {mask!r} relates several ranges of an access placed per position")
    keep: dict[int, tuple[int, int]] = {}
    for axis, bounds in mask.keep.items():
        placed = mapping.get((mask.grids.get(axis), axis))
        if placed is None:
            tile._fail(f"mask {mask!r} bounds a range the access {tile!r} does not index")
        keep[placed] = bounds
    return Mask(len(tile.shape), keep)


def dma_parts(dst: Tile, src: Tile, mask: Any) -> list[tuple[Tile, Tile]]:
    """The (destination, source) pairs a masked beta-1 DMA moves: ``mask`` cut out of
    both, or, for a predicate over several ranges that is false on part of the tile,
    one pair per box of the elements it keeps (``_boxes``). aws-neuron/nkipy's beta-1
    token-generation RMSNorm loads a hidden size that is not a multiple of 128 as
    ``x[i_f0, i_p * H1 + i_f1]`` under ``mask=i_p * H1 + i_f1 < H``. The DMA moves only
    the elements the mask keeps, as the NKI masking docs describe a mask; a DMA per
    box is the simulator's lowering (unverified)."""
    parts = None
    if isinstance(mask, Mask) and not mask.is_box and dst.shape == src.shape:
        if not _holds_everywhere(dst, mask):
            parts = _boxes(mask, tuple(dst.shape))
    if not parts:
        return [(dst.clip(mask), src.clip(mask))]
    return [(dst.clip(part), src.clip(part)) for part in parts]


def _boxes(mask: Mask, shape: tuple[int, ...]) -> list[Mask] | None:
    """``mask`` over an index space of ``shape`` as boxes: runs of partitions keeping the
    same free elements, each run's elements split the same way along the next axis, and
    so on; None past ``MAX_DMA_BOXES`` boxes."""
    try:
        held = np.broadcast_to(mask.evaluate(shape), shape)
    except IndexError_:
        return None
    boxes = _runs(held)
    if len(boxes) > MAX_DMA_BOXES:
        return None
    return [Mask(len(shape), dict(enumerate(box))) for box in boxes]


# More boxes than this and a masked DMA is refused as before (a predicate that cuts a
# tile into many pieces is better written with nisa.affine_select).
MAX_DMA_BOXES = 256


def _runs(held: np.ndarray) -> list[tuple[tuple[int, int], ...]]:
    """The boxes (an interval per axis) whose union is where ``held`` is true."""
    out: list[tuple[tuple[int, int], ...]] = []
    p, n = 0, held.shape[0]
    while p < n:
        q = p + 1
        while q < n and np.array_equal(held[q], held[p]):
            q += 1
        if held[p].any():
            rest = [()] if held.ndim == 1 else _runs(held[p])
            out.extend(((p, q), *box) for box in rest)
        p = q
    return out
