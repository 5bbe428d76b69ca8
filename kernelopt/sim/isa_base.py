"""The shared half of the simulator's ``nki.isa``: operand checks and the trace record.

Every call checks its ISA rules first (so trace-only runs catch the same
violations), then computes on float32 data unless the machine is trace-only,
then appends an ``Instruction``. The calls themselves live in one module per
engine family (``isa_tensor``, ``isa_dma``, ``isa_engines``).
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

from kernelopt.sim.cost import PERFORMANCE_MODE_OPS, vector_speedup
from kernelopt.sim.enums import engine_of
from kernelopt.sim.ops import ALU_ABS, NUMPY_OPS, Op
from kernelopt.sim.tensor import Tile
from kernelopt.sim.trace import Instruction

if TYPE_CHECKING:
    from kernelopt.sim.machine import Machine


class IsaCore:
    """Operand checks and instruction emission, bound to one machine."""

    def __init__(self, machine: Machine) -> None:
        self.m = machine

    def _tile(self, op: str, role: str, value: Any) -> Tile:
        if not isinstance(value, Tile):
            self.m.fail("isa", f"{op}: {role} must be a tensor tile, got {type(value).__name__}")
        return value.checked() if value.loose else value

    def _in(self, op: str, role: str, tile: Tile, *kinds: str) -> None:
        if tile.buffer.kind not in kinds:
            wanted = " or ".join(k.upper() for k in kinds)
            self.m.fail(
                "isa",
                f"{op}: {role} must be in {wanted}, got {tile.buffer.kind.upper()} tensor "
                f"{tile.alloc.name!r}",
            )

    def _same_shape(self, op: str, dst: Tile, role: str, other: Tile) -> None:
        if dst.shape != other.shape:
            self.m.fail("isa", f"{op}: shape mismatch: dst {dst.shape} vs {role} {other.shape}")

    def _op(self, name: str, value: Any, arity: int) -> Op:
        # Beta-1 kernels pass op=np.add, np.max, or a reduction such as nl.max.
        value = getattr(value, "nki_op", value)
        if callable(value) and not isinstance(value, Op):
            value = NUMPY_OPS.get(value, value)
        if arity == 2 and isinstance(value, Op) and value.name == "abs":
            value = ALU_ABS
        if not isinstance(value, Op) or value.arity != arity:
            kind = (
                "a binary nl op (nl.add, nl.multiply, ...)"
                if arity == 2
                else ("an activation (nl.exp, nl.relu, ...)")
            )
            self.m.fail("isa", f"{name}: op must be {kind}, got {value!r}")
        return value

    def _column(self, op: str, role: str, value: Any, partitions: int) -> Tile | float:
        """A scalar operand: a Python number or a [P, 1] on-chip tile."""
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        tile = self._tile(op, role, value)
        self._in(op, role, tile, "sbuf", "psum")
        # One element per partition: [P, 1], or [P] as a beta-1 reduction returns it.
        if tile.partitions != partitions or tile.free_size != 1:
            self.m.fail(
                "isa",
                f"{op}: {role} must be a scalar or a [{partitions}, 1] tile, got {tile.shape}",
            )
        return tile

    def _engine(self, op: str, value: Any, default: str, allowed: tuple[str, ...]) -> str:
        """The engine ``engine=`` asks for (``default`` when unknown), checked against ``allowed``."""
        choice = engine_of(value)
        if choice is None:
            self.m.fail("isa", f"{op}: engine must be a nisa.engine member, got {value!r}")
        engine = choice or default
        if engine not in allowed:
            self.m.fail(
                "isa", f"{op}: cannot run on the {engine} engine (allowed: {', '.join(allowed)})"
            )
        return engine

    def _value(self, operand: Tile | float, what: str, ndim: int = 2) -> Any:
        """A scalar operand's value; a column as [P, 1, ...] to broadcast over an
        ``ndim``-D tile along its free axes."""
        if isinstance(operand, Tile):
            values = self.m.read(operand, what)
            if values is None:
                return None
            return values.reshape((operand.partitions,) + (1,) * (ndim - 1))
        return operand

    def _emit(
        self, op: str, engine: str, reads: list[Tile], writes: list[Tile], **cost: Any
    ) -> None:
        self.m.emit(
            Instruction(
                op=op,
                engine=engine,
                line=self.m.line(),
                # An indirect access also reads its index tile.
                reads=tuple(t.region for t in reads)
                + tuple(t.via.region for t in reads + writes if t.via is not None),
                writes=tuple(t.region for t in writes),
                shape=writes[0].shape,
                psum_read=any(t.buffer.kind == "psum" for t in reads),
                strided=any(
                    t.coords is not None and t.minor_stride_bytes > 16 for t in reads + writes
                ),
                vector_speedup=self._vector_speedup(op, engine, reads, writes),
                **cost,
            )
        )

    def _vector_speedup(self, op: str, engine: str, reads: list[Tile], writes: list[Tile]) -> int:
        """VectorE's performance mode for this instruction (``sim.cost.vector_speedup``),
        from its data and destination; a tensor_scalar's [P, 1] operands do not count."""
        if engine != "vector" or op not in PERFORMANCE_MODE_OPS or not reads or not writes:
            return 1
        data, dst = max(reads, key=lambda t: t.free_size), writes[0]
        psum = any(t.buffer.kind == "psum" for t in (data, dst))
        dtypes = (data.dtype.name, dst.dtype.name)
        if vector_speedup(op, dtypes, psum) == 1:
            return 1
        contiguous = all(t.minor_stride_bytes == t.dtype.itemsize for t in (data, dst))
        return vector_speedup(op, dtypes, psum, contiguous)
