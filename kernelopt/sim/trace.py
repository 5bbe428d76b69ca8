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
    transpose: bool = False  # a TensorE transpose: nc_transpose, or nc_matmul(is_transpose=True)
    inputs: float = 1  # streamed passes per element (8 for a reciprocal on Trn2)
    nbytes: int = 0
    row_bytes: int = 0
    hbm_read: int = 0
    hbm_write: int = 0
    macs: int = 0
    transpose_efficiency: float = 1.0
    elements_per_cycle: int = 1  # memset: 2 for a zero fill of a 2-byte dtype
    psum_read: bool = False  # an operand is read from PSUM
    software_dge: bool = False  # DMA descriptors generated in software (dge_mode=swdge)
    # Descriptors made on the host before the run (dge_mode=none): none generated on device.
    precomputed_descriptors: bool = False
    # Engine cycles beyond the streamed elements (a reduction read out of ScalarE's
    # accumulator, ~64 cycles); and a documented whole-instruction cost that
    # replaces the streaming formula when set (GpSimd iota: 150 + N).
    extra_cycles: int = 0
    cycles: int = 0
    # An operand's most-minor stride exceeds 16 bytes: each read/write interface
    # streams at half rate (NKI architecture guide, NeuronCore-v2 access patterns).
    strided: bool = False
    # VectorE's performance mode (``Trn2Params.vector_performance_mode``): 4 or 2 times
    # the elements per cycle for a 16-bit tensor_copy or tensor_scalar; 1 otherwise.
    vector_speedup: int = 1
    # A dynamic loop's control (kernelopt.sim.dynamic): 1 at its start, a gate nothing
    # after starts before; 2 ending an iteration, also waiting for everything before.
    barrier: int = 0


@dataclass(frozen=True, slots=True)
class AllocationInfo:
    """What the memory planner and scheduler need about an allocation, without
    keeping it alive.

    ``nbytes`` is its size per partition on chip (PSUM: packed into banks, 0 in
    HBM). ``reuses`` lists the allocations whose physical memory this one
    takes over (dead by its first touch; see ``kernelopt.sim.memory``);
    empty when it gets fresh memory. ``site`` is the kernel lines on the
    call stack where it was allocated (outermost first) and ``generation``
    counts the times that site allocated, tiles allocated with no
    instruction in between sharing one generation.
    """

    alloc_id: int
    name: str
    kind: str
    line: int
    nbytes: int = 0
    reuses: tuple[int, ...] = ()
    address: tuple[int, ...] | None = None  # hand-placed with nl.ndarray(address=...)
    site: tuple[int, ...] = ()
    generation: int = 0
    partitions: int = 0  # on chip: the partitions it spans
    shape: tuple[int, ...] = ()  # of the tensor (a region of all of it is its full box)
