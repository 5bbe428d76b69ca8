"""The beta-1 ``neuronxcc.nki.compiler`` module: directives and direct allocation.

Directives (``skip_middle_end_transformations``, ``enable_stack_allocator``,
``no_reorder()``, ...) change how a kernel is compiled, not what it computes:
decorators and calls that hand back what they were given.

Direct allocation places on-chip tensors by hand (SDK 2.2x "NKI direct
allocation" guide): ``nki.compiler.sbuf.mod_alloc(base_addr=, num_free_tiles=)``
puts a block array's blocks at ``base_addr`` bytes into each partition,
block ``i`` in physical copy ``i % num_free_tiles``;
``nki.compiler.psum.mod_alloc(base_bank=, num_bank_tiles=)`` does the same
with whole 2 KiB PSUM banks; ``sbuf.alloc(func)`` / ``psum.alloc(func)`` place each
block where ``func`` says (``beta1_tiles.placed_by``). The simulator honours the placement: blocks
sharing a copy are one buffer, so the kernel waits for the copy to be free
(``kernelopt.sim.memory``, hand-placed allocations).
"""

from __future__ import annotations

import types
from typing import Any

from kernelopt.sim.language import BUFFERS
from kernelopt.sim.tensor import PlacedBuffer

PSUM_BANK_BYTES = 2048


def directive(*args: Any, **_: Any) -> Any:
    """A compiler directive: ``@directive``, ``@directive(...)`` or a plain call."""
    if len(args) == 1 and callable(args[0]):
        return args[0]
    return lambda func=None, *rest, **kw: func


def _tiles(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, tuple | list) else (value,)
    return tuple(max(1, int(n)) for n in items)


def _sbuf_mod_alloc(
    base_addr: int = 0,
    *,
    base_partition: int = 0,
    num_par_tiles: Any = (),
    num_free_tiles: Any = (),
    **_: Any,
) -> PlacedBuffer:
    return PlacedBuffer("sbuf", "sbuf", base=int(base_addr), tiles=_tiles(num_free_tiles))


def _psum_mod_alloc(
    base_bank: int = 0, *, base_addr: int = 0, num_bank_tiles: Any = (), **_: Any
) -> PlacedBuffer:
    base = int(base_bank) * PSUM_BANK_BYTES + int(base_addr)
    return PlacedBuffer("psum", "psum", base=base, tiles=_tiles(num_bank_tiles))


def _alloc(kind: str) -> Any:
    return lambda func: PlacedBuffer(kind, kind, func=func)


def build_compiler() -> types.ModuleType:
    compiler = types.ModuleType("neuronxcc.nki.compiler", "nki.compiler (beta 1) as simulated")
    compiler.sbuf = types.SimpleNamespace(
        mod_alloc=_sbuf_mod_alloc, alloc=_alloc("sbuf"), auto_alloc=lambda *a, **k: BUFFERS["sbuf"]
    )
    compiler.psum = types.SimpleNamespace(
        mod_alloc=_psum_mod_alloc, alloc=_alloc("psum"), auto_alloc=lambda *a, **k: BUFFERS["psum"]
    )
    compiler.__getattr__ = lambda name: directive  # type: ignore[attr-defined]
    return compiler
