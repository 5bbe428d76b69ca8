"""One record per executed ISA instruction: what the cost model and scheduler need."""

from __future__ import annotations

from dataclasses import dataclass

Region = tuple[int, tuple[tuple[int, int], ...]]  # (allocation id, box per axis)

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


@dataclass(frozen=True, slots=True)
class Instruction:
    """An executed instruction.

    ``free`` is the free size (elements per partition) that sets engine time;
    ``stationary_free`` the matmul M; ``wide`` marks 4-byte operands (the
    slow TensorE path); ``inputs`` the tensor operands a compute engine
    streams; ``nbytes``/``row_bytes`` size a DMA.
    """

    op: str
    engine: str
    line: int
    reads: tuple[Region, ...]
    writes: tuple[Region, ...]
    shape: tuple[int, ...] = ()  # of the destination tile
    partitions: int = 0
    free: int = 0
    stationary_free: int = 0
    wide: bool = False
    inputs: int = 1
    nbytes: int = 0
    row_bytes: int = 0
    hbm_read: int = 0
    hbm_write: int = 0
    macs: int = 0
    transpose_efficiency: float = 1.0


@dataclass(frozen=True, slots=True)
class AllocationInfo:
    """What the scheduler needs about an allocation, without keeping it alive.

    ``reuses`` is the allocation whose physical copy this one takes over
    (the same allocation site ``rotation_depth`` generations earlier, dead by
    then), or -1 when it gets fresh memory.
    """

    alloc_id: int
    name: str
    kind: str
    line: int
    reuses: int
    address: tuple[int, ...] | None = None  # hand-placed with nl.ndarray(address=...)
