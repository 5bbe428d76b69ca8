"""SPMD launches and numpy arguments: ``kernel[2, 2](a, b)`` on one simulated core.

A beta-1 kernel launched on a grid (``kernel[gx, gy](...)``) runs once per
program, in row-major order of the grid, on the one NeuronCore the simulator
models: ``nl.program_id(axis)`` gives the running program's index. The
programs share their HBM tensors: an ``nl.ndarray(..., buffer=nl.shared_hbm)``
made at the same place in a later program is the tensor the first program
made, so all programs write one output, and the launch returns the first
program's result. A numpy array passed to a kernel from a plain Python wrapper
(the tutorials' ``c_output = np.zeros(...)`` for ``nki.baremetal``) becomes an
HBM tensor for the call and holds the kernel's result afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from kernelopt.sim.machine import Machine
    from kernelopt.sim.tensor import Tile


@dataclass(frozen=True)
class Program:
    """The running program of a launch: its index per grid axis and its order."""

    ids: tuple[int, ...]
    grid: tuple[int, ...]
    order: int


def grid_of(key: Any) -> tuple[int, ...]:
    """``kernel[key]``: an int or a tuple of ints (``nl.spmd_dim(a, b)`` is ``a * b``)."""
    items = key if isinstance(key, tuple) else (key,)
    grid = []
    for item in items:
        try:
            n = int(item)
        except (TypeError, ValueError):
            raise TypeError(f"an SPMD grid takes integer sizes, got {item!r}") from None
        if n < 1:
            raise ValueError(f"an SPMD grid size must be positive, got {n}")
        grid.append(n)
    return tuple(grid)


def _bind(machine: Machine, value: Any, bound: list[tuple[np.ndarray, Tile]]) -> Any:
    if not isinstance(value, np.ndarray):
        return value
    from kernelopt.sim.language import BUFFERS

    store = np.int32 if value.dtype.kind in "iu" else np.float32
    data = np.ascontiguousarray(value, dtype=store) if machine.compute else None
    tile = machine.allocate(value.shape, value.dtype, BUFFERS["hbm"], None, data=data, filled=True)
    bound.append((value, tile))
    return tile


def launch(
    machine: Machine,
    func: Callable[..., Any],
    grid: tuple[int, ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Run ``func`` once per program of ``grid`` (once for an empty grid)."""
    bound: list[tuple[np.ndarray, Tile]] = []
    args = tuple(_bind(machine, a, bound) for a in args)
    kwargs = {k: _bind(machine, v, bound) for k, v in kwargs.items()}
    outer = machine.program
    result = None
    for order, ids in enumerate(np.ndindex(*grid) if grid else [()]):
        machine.program = Program(tuple(int(i) for i in ids), grid, order) if grid else outer
        machine.spmd_counts.clear()
        out = func(*args, **kwargs)
        if order == 0:
            result = out
    machine.program = outer
    for array, tile in bound:
        machine.bound_arrays[id(array)] = (array, tile)
        if tile.alloc.data is not None:
            array[...] = tile.alloc.data.astype(array.dtype)
    return result
