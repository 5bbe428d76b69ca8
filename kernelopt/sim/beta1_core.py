"""What every beta-1 operation stands on: the machine and ISA it lowers to,
result tiles, dtypes, and tiles as operands (checked, moved into SBUF, copied)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim.beta1_tiles import BlockArray, BlockView
from kernelopt.sim.language import BUFFERS, resolve_dtype
from kernelopt.sim.ops import OPS
from kernelopt.sim.tensor import Tile
from kernelopt.sim.views import merged_free_axes

if TYPE_CHECKING:
    from kernelopt.sim.isa import Isa
    from kernelopt.sim.machine import Machine


class Beta1Core:
    """The tile semantics' state and the helpers its operations share."""

    def __init__(self, machine: Machine, isa: Isa) -> None:
        self.m, self.isa = machine, isa
        # loop_reduce accumulators per call site, and the reductions made there that no
        # assignment took (kernelopt.sim.beta1_ops.LoopReduction).
        self._reduce: dict[tuple[int, ...], Tile] = {}
        self._pending: dict[tuple[int, ...], list[Any]] = {}
        # Allocations made for results (not declared by the kernel): the ones an
        # assignment may retarget.
        self._temps: set[int] = set()

    # --- allocation --------------------------------------------------------------------

    def _dtype(self, dtype: Any, default: np.dtype) -> np.dtype:
        if dtype is None:
            return default
        resolved = resolve_dtype(dtype)
        if resolved is None:
            self.m.fail("isa", f"unknown dtype {dtype!r}")
        return resolved

    def new(self, shape: tuple[int, ...], dtype: np.dtype, kind: str = "sbuf") -> Tile:
        tile = self.m.allocate(
            tuple(int(d) for d in shape), dtype, BUFFERS[kind], None, poison=False
        )
        self._temps.add(tile.alloc.id)
        return tile

    # --- tiles as operands -------------------------------------------------------------

    def _tile(self, what: str, value: Any) -> Tile:
        if hasattr(value, "first") and hasattr(value, "src"):
            return self.reduced(value)  # type: ignore[attr-defined]  # an nl.loop_reduce
        if isinstance(value, BlockArray | BlockView):
            self.m.fail("isa", f"{what}: index the block array {value!r} down to one block")
        if not isinstance(value, Tile):
            self.m.fail("isa", f"{what}: expected a tile, got {type(value).__name__}")
        return value

    def _matmul_result(self, stationary: Tile, moving: Tile) -> tuple[Tile, Tile, Tile]:
        """A matmul's new PSUM result, and the 2-D moving operand and result the
        instruction takes. A moving tile with several free axes is read flat, as the
        v2.2x nc_transpose page says it does for its data (the nc_matmul page is silent:
        unverified), and the result keeps those free axes: a public CS149 solution
        (waahm7/asst4-trainium part2/conv2d_non_optimized.py) accumulates a
        [128, 2, W] moving tile's product into a [128, 2, W] PSUM tile. A [K] moving tile
        (a reduction's result, one element per partition) is read as [K, 1] and gives an
        [M] result, as numpy's matmul of a matrix and a vector: awslabs/
        state-space-models-neuron @3e6d165 mamba2/mamba2_kernel_inference.py multiplies by
        such a sum (unverified: the nl.matmul page speaks of 2-D tiles)."""
        shape = (stationary.shape[-1], *moving.shape[1:])
        dst = self.new(shape, np.dtype(np.float32), "psum")
        if moving.ndim == 2:
            return dst, moving, dst
        return dst, merged_free_axes(moving), merged_free_axes(dst)

    def _in_sbuf(self, what: str, tile: Tile) -> Tile:
        """``tile`` itself, or a copy in SBUF when it lives in PSUM (the compiler
        inserts that copy for an engine that reads only SBUF)."""
        if tile.buffer.kind == "sbuf":
            return tile
        copy = self.new(tile.shape, tile.dtype)
        if tile.buffer.kind == "psum":
            self._copy(copy, tile)
        else:
            self.isa.dma_copy(copy, tile)
        return copy

    def _copy(self, dst: Tile, src: Tile) -> None:
        """A high-level copy (``nl.copy``, or one the compiler inserts to move a tile
        out of PSUM): the compiler lowers it to a ScalarE (ACT) copy. Evidence: the
        public Trn1 profiles of NKIBench's bmm, matmul and transpose_matmul, whose
        only work besides matmuls is such copies, show ScalarE 37 %, 6.8 % and
        3.8 % active and VectorE 0.0 %."""
        self.isa.activation(dst, OPS["copy"], src)
