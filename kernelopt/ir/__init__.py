"""KernelIR: a workload's op graph lowered to buffers and loops, tuned by three knobs.

``build_ir`` traces ``f_nkigym``; ``validity_report`` explains a knob state;
``sample`` draws a valid one; ``render_ir`` prints the NKI kernel it means.
"""

from kernelopt.ir.build import build_ir
from kernelopt.ir.footprint import fits, footprint
from kernelopt.ir.knobs_io import (
    KnobsError,
    ir_for_workload,
    ir_from_knobs,
    knobs_text,
    knobs_to_json,
    read_knobs,
)
from kernelopt.ir.mac import compute_mac_count, roofline_work
from kernelopt.ir.model import Dim, KernelIR, Operator, PhysicalBuffer, Scope
from kernelopt.ir.ops import (
    NKIActivation,
    NKIMatmul,
    NKIOp,
    NKIReciprocal,
    NKITensorReduce,
    NKITensorScalar,
    NKITensorTensor,
    NKITranspose,
    OpError,
)
from kernelopt.ir.render import RenderError, render_ir
from kernelopt.ir.rewrites import REWRITES, LoadTranspose, enumerate_rewrite_combinations
from kernelopt.ir.sample import SampleError, knob_signature, sample
from kernelopt.ir.trace import IRBuildError
from kernelopt.ir.validate import ValidityFailure, apply_fix, validity_report

__all__ = [
    "REWRITES",
    "Dim",
    "IRBuildError",
    "KernelIR",
    "KnobsError",
    "LoadTranspose",
    "NKIActivation",
    "NKIMatmul",
    "NKIOp",
    "NKIReciprocal",
    "NKITensorReduce",
    "NKITensorScalar",
    "NKITensorTensor",
    "NKITranspose",
    "OpError",
    "Operator",
    "PhysicalBuffer",
    "RenderError",
    "SampleError",
    "Scope",
    "ValidityFailure",
    "apply_fix",
    "build_ir",
    "compute_mac_count",
    "enumerate_rewrite_combinations",
    "fits",
    "footprint",
    "ir_for_workload",
    "ir_from_knobs",
    "knob_signature",
    "knobs_text",
    "knobs_to_json",
    "read_knobs",
    "render_ir",
    "roofline_work",
    "sample",
    "validity_report",
]
