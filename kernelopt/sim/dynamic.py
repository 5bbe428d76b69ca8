"""Registers and dynamic loops of the current API: ``nisa.register_alloc``,
``register_move``, ``register_load``, ``register_store``, ``nl.dynamic_range`` and
``nl.fori_loop``.

A virtual register holds one 32-bit integer (nki.isa.register_alloc page: "64x 32-bit
registers per engine sequencer"; register_load: "a single scalar value (up to 32-bit)"
from a one-element HBM/SBUF tensor). A dynamic loop runs its body once per value of
``range(start, stop, step)``, the bounds ints or registers, the step a compile-time
positive int (nki.language.dynamic_range and fori_loop pages; the NKI dynamic-loops
deep dive, aws-neuron-sdk ``nki/deep-dives/nki-dynamic-loops.rst`` @81d17e7). The body
gets the iteration value as a register, which an access pattern takes as
``scalar_offset`` (``kernelopt.sim.access.pattern_view``).

The simulator runs the kernel's Python, so a loop bound read from memory is read when
the loop starts: a trace-only run (no data) cannot simulate one. Timing, from the deep
dive: "The compiler ends every iteration of a dynamic loop ... with a drain and a
barrier across all engines ... No instruction of iteration i + 1 starts before every
engine has finished iteration i". Each iteration ends with a barrier instruction
(``Instruction.barrier == 2``, ``kernelopt.sim.schedule``); the loop's start is a gate
that reads the bound registers (``barrier == 1``: nothing after it starts before it).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim.access import pattern_view
from kernelopt.sim.tensor import Buffer, Tile
from kernelopt.sim.trace import Instruction

if TYPE_CHECKING:
    from kernelopt.sim.machine import Machine

# A register's value lives in a one-element cell of its own, so that the scheduler
# orders the instructions that write and read it as any other data.
REGISTER = Buffer("register", "hbm")


class VirtualRegister:
    """``nisa.VirtualRegister``: a 32-bit integer known when the kernel's Python runs
    (``value``), or None in a trace-only run for one loaded from memory."""

    def __init__(self, machine: Machine, value: int | None, cell: Tile | None = None) -> None:
        self.machine = machine
        self.value = value
        self.cell = cell

    def known(self, what: str) -> int:
        if self.value is None:
            self.machine.fail(
                "isa",
                f"{what}: a register loaded from memory has no value in a trace-only run "
                "(run with compute=True to simulate a dynamic loop)",
            )
        return self.value

    def __bool__(self) -> bool:
        self.machine.fail(
            "isa",
            "a register in Python control flow (while reg:) is not simulated; use nl.fori_loop",
        )

    def __repr__(self) -> str:
        return f"VirtualRegister({self.value})"


def _int32(value: Any) -> int:
    """A value as a 32-bit register holds it (two's complement)."""
    return int(np.int64(int(value)).astype(np.int32))


class RegisterCalls:
    """The register calls and dynamic loops, bound to one machine."""

    def __init__(self, machine: Machine) -> None:
        self.m = machine

    def _cell(self) -> Tile:
        return self.m.allocate(
            (1,),
            np.dtype(np.int32),
            REGISTER,
            "register",
            data=np.zeros(1, np.int32),
            filled=True,
        )

    def register_alloc(self, x: Any = None) -> VirtualRegister:
        """A new register, set to ``x`` (an int or another register) if given."""
        reg = VirtualRegister(self.m, None, self._cell())
        if x is not None:
            self.register_move(reg, x)
        return reg

    def _register(self, what: str, value: Any) -> VirtualRegister:
        if not isinstance(value, VirtualRegister):
            self.m.fail("isa", f"{what}: dst must be a register (nisa.register_alloc())")
        return value

    def register_move(self, dst: Any, imm: Any = None, src: Any = None) -> None:
        """A compile-time int (or, on the v2.29 page, another register) into ``dst``:
        no memory is touched and no instruction is costed (unverified)."""
        reg = self._register("register_move", dst)
        value = imm if src is None else src
        if isinstance(value, VirtualRegister):
            reg.value = value.value
            return
        try:
            reg.value = _int32(operator.index(value))
        except TypeError:
            self.m.fail("isa", f"register_move: {value!r} is not a compile-time int")

    def _one(self, what: str, tile: Any) -> Tile:
        if not isinstance(tile, Tile) or tile.size != 1 or tile.buffer.kind not in ("sbuf", "hbm"):
            self.m.fail("isa", f"{what}: a one-element SBUF or HBM tensor, got {tile!r}")
        return tile

    def register_load(self, dst: Any, src: Any) -> None:
        """The scalar in ``src`` into ``dst``, as an engine sequencer reads it: costed as
        the smallest GpSimd instruction (unverified: no page gives the figure)."""
        reg = self._register("register_load", dst)
        tile = self._one("register_load", src)
        values = self.m.read(tile, "register_load")
        reg.value = None if values is None else _int32(np.asarray(values).reshape(-1)[0])
        self._emit("register_load", [tile], [reg.cell])

    def register_store(self, dst: Any, src: Any) -> None:
        """``src``'s value into the one-element tensor ``dst`` (costed as register_load)."""
        reg = self._register("register_store", src)
        tile = self._one("register_store", dst)
        self.m.write(tile, None if reg.value is None else np.float32(reg.value))
        self._emit("register_store", [reg.cell], [tile])

    def _emit(self, op: str, reads: list[Any], writes: list[Any], barrier: int = 0) -> None:
        self.m.emit(
            Instruction(
                op=op,
                engine="gpsimd",
                line=self.m.line(),
                reads=tuple(t.region for t in reads if t is not None),
                writes=tuple(t.region for t in writes if t is not None),
                shape=(1, 1),
                partitions=1,
                free=1,
                barrier=barrier,
            )
        )

    def _bound(self, what: str, value: Any) -> int:
        if isinstance(value, VirtualRegister):
            return value.known(what)
        try:
            return operator.index(value)
        except TypeError:
            self.m.fail("isa", f"{what}: a bound must be an int or a register, got {value!r}")

    def dynamic_range(self, start: Any, stop: Any = None, step: Any = 1) -> Iterator[Any]:
        """``nl.dynamic_range``: ``range(start, stop, step)`` run as a hardware loop."""
        if stop is None:
            start, stop = 0, start
        return self._loop("dynamic_range", start, stop, step)

    def fori_loop(self, lower: Any, upper: Any, body_fun: Callable[[Any], Any], step: Any = 1):
        """``nl.fori_loop``: ``body_fun(i)`` for ``i`` in ``range(lower, upper, step)``."""
        for i in self._loop("fori_loop", lower, upper, step):
            body_fun(i)

    def _loop(self, what: str, start: Any, stop: Any, step: Any) -> Iterator[Any]:
        if isinstance(step, VirtualRegister) or not isinstance(step, int) or step < 1:
            self.m.fail("isa", f"{what}: step must be a compile-time positive int, got {step!r}")
        lo, hi = self._bound(what, start), self._bound(what, stop)
        cells = [b.cell for b in (start, stop) if isinstance(b, VirtualRegister)]
        self._emit(f"{what}_start", cells, [], barrier=1)
        for value in range(lo, hi, step):
            yield VirtualRegister(self.m, value)
            self._emit(f"{what}_barrier", [], [], barrier=2)


def access_pattern(
    tile: Tile,
    pattern: Any,
    offset: Any = 0,
    scalar_offset: Any = None,
    indirect_dim: Any = 0,
    **options: Any,
) -> Tile:
    """``t.ap(pattern=, offset=, scalar_offset=, indirect_dim=)``: the access pattern's
    view (``kernelopt.sim.access.pattern_view``) moved by a run-time scalar offset."""
    if pattern is None:
        tile._fail(".ap: pattern=[[step, num], ...] is required")
    shift, via = scalar_shift(tile, scalar_offset, indirect_dim)
    start = (0 if offset is None else offset) + shift
    return Tile(tile.alloc, *pattern_view(tile, pattern, start, **options), via=via)


def scalar_shift(tile: Tile, scalar_offset: Any, indirect_dim: Any) -> tuple[int, Tile | None]:
    """``t.ap(..., scalar_offset=s, indirect_dim=d)``: the elements the access moves by,
    ``s`` times the stride of dim ``d`` of ``t`` (nki.language.NkiTensor page, ``ap``:
    "dimension in self.shape whose stride scales the indirect scalar/vector offset"), and
    what holds ``s`` (a one-element on-chip tensor, or a register's cell), which the
    instruction then reads. In a trace-only run a tensor's value is unknown: 0."""
    if scalar_offset is None:
        return 0, None
    m = tile.alloc.machine
    shape = tile.alloc.shape
    try:
        dim = operator.index(indirect_dim)
    except TypeError:
        m.fail("isa", f".ap: indirect_dim must be an int, got {indirect_dim!r}")
    if not 0 <= dim < len(shape):
        m.fail("isa", f".ap: indirect_dim {dim} is out of range for a {len(shape)}-D tensor")
    stride = int(np.prod(shape[dim + 1 :], dtype=np.int64))
    if isinstance(scalar_offset, VirtualRegister):
        return scalar_offset.known(".ap scalar_offset") * stride, scalar_offset.cell
    if not isinstance(scalar_offset, Tile) or scalar_offset.size != 1:
        m.fail(
            "isa",
            f".ap: scalar_offset must be a register or a one-element tensor, got {scalar_offset!r}",
        )
    if not scalar_offset.buffer.on_chip:
        m.fail("isa", f".ap: scalar_offset must be on chip (SBUF), got {scalar_offset!r}")
    values = m.read(scalar_offset, ".ap scalar_offset")
    value = 0 if values is None else _int32(np.asarray(values).reshape(-1)[0])
    return value * stride, scalar_offset
