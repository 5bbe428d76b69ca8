"""``nki.isa`` for the simulator: rule checks, numpy semantics, one trace record per call.

Every call checks its ISA rules first (so trace-only runs catch the same
violations), then computes on float32 data unless the machine is trace-only,
then appends an ``Instruction``.
"""

from __future__ import annotations

from kernelopt.sim.isa_dma import DmaCalls
from kernelopt.sim.isa_fused import FusedCalls
from kernelopt.sim.isa_more import MoreCalls
from kernelopt.sim.isa_random import RandomCalls
from kernelopt.sim.isa_select import SelectCalls
from kernelopt.sim.isa_tensor import TensorCalls


class Isa(TensorCalls, DmaCalls, RandomCalls, SelectCalls, FusedCalls, MoreCalls):
    """The ISA calls, bound to one machine."""


ISA_CALLS = (
    "nc_matmul",
    "nc_transpose",
    "dma_copy",
    "dma_transpose",
    "tensor_tensor",
    "tensor_scalar",
    "tensor_copy",
    "activation",
    "activation_reduce",
    "scalar_tensor_tensor",
    "tensor_reduce",
    "memset",
    "reciprocal",
    "dropout",
    "max8",
    "nc_find_index8",
    "tensor_copy_predicated",
    "tensor_partition_reduce",
    "tensor_tensor_scan",
    "tensor_scalar_cumulative",
    "tensor_scalar_reduce",
    "affine_select",
    "iota",
    "bn_stats",
    "bn_aggr",
)
