"""A five-point Jacobi stencil on a square float32 grid, tiled in time and space.

This is the file a tuning run edits. ``bench.py`` calls ``stencil(grid, steps,
block, order)`` with the knobs from ``knobs.json`` and checks the answer against
its own untiled reference, so any rewrite here must keep the same result.

Each tile is copied out with a halo of ``steps`` cells, advanced ``steps`` times
while it is hot in cache, and only its interior is written back. ``block`` is the
tile edge; ``order`` picks the tile shape: ``rows`` (strips of ``block`` full-width
rows, contiguous), ``cols`` (strips of ``block`` full-height columns, strided
reads) or ``tiles`` (``block`` x ``block`` squares).
"""

from __future__ import annotations

import numpy as np

ORDERS = ("rows", "cols", "tiles")


def jacobi_step(u: np.ndarray) -> np.ndarray:
    """One Jacobi update of the interior; the boundary ring stays fixed."""
    v = u.copy()
    v[1:-1, 1:-1] = 0.5 * u[1:-1, 1:-1] + 0.125 * (
        u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]
    )
    return v


def _advance(tile: np.ndarray, steps: int) -> np.ndarray:
    for _ in range(steps):
        tile = jacobi_step(tile)
    return tile


def _spans(n: int, block: int, halo: int) -> list[tuple[int, int, int, int]]:
    """(start, stop) of each interior span with the (lo, hi) of its haloed copy."""
    spans = []
    for start in range(1, n - 1, block):
        stop = min(start + block, n - 1)
        spans.append((start, stop, max(start - halo, 0), min(stop + halo, n)))
    return spans


def _row_strips(u: np.ndarray, steps: int, block: int) -> np.ndarray:
    out = u.copy()
    for start, stop, lo, hi in _spans(u.shape[0], block, steps):
        tile = _advance(u[lo:hi].copy(), steps)
        out[start:stop] = tile[start - lo : stop - lo]
    return out


def _square_tiles(u: np.ndarray, steps: int, block: int) -> np.ndarray:
    out = u.copy()
    spans = _spans(u.shape[0], block, steps)
    for r0, r1, rlo, rhi in spans:
        for c0, c1, clo, chi in spans:
            tile = _advance(u[rlo:rhi, clo:chi].copy(), steps)
            out[r0:r1, c0:c1] = tile[r0 - rlo : r1 - rlo, c0 - clo : c1 - clo]
    return out


def stencil(grid: np.ndarray, steps: int, block: int, order: str) -> np.ndarray:
    """``steps`` Jacobi updates of ``grid`` (n x n), computed tile by tile."""
    if order == "rows":
        return _row_strips(grid, steps, block)
    if order == "cols":
        # The stencil is symmetric in its axes, so column strips are row strips
        # of the transposed view; copying them out is where the strided reads cost.
        return _row_strips(grid.T, steps, block).T
    if order == "tiles":
        return _square_tiles(grid, steps, block)
    raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
