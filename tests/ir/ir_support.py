"""Every shipped workload, at its real size and at a small test size (shared by tests/ir)."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from types import ModuleType

from kernelopt.ir import KernelIR, build_ir
from kernelopt.workload import Workload, load_workload

ROOT = Path(__file__).resolve().parents[2]
IR_DIR = ROOT / "ir"

# Same math, fewer tiles: two tiles on every dim keeps each knob meaningful and the
# simulator fast. Every workload shipped under ir/ must appear here.
SMALL_SPECS: dict[str, dict[str, tuple[tuple[int, ...], str]]] = {
    "matmul": {"lhsT": ((256, 256), "bfloat16"), "rhs": ((256, 1024), "bfloat16")},
    "matmul_lhs_rhs": {"lhs": ((256, 256), "bfloat16"), "rhs": ((256, 1024), "bfloat16")},
    "matmul_gelu": {"lhsT": ((256, 256), "bfloat16"), "rhs": ((256, 1024), "bfloat16")},
    "rmsnorm_matmul": {"x": ((256, 256), "bfloat16"), "w": ((256, 1024), "bfloat16")},
    "softmax": {"x": ((256, 1024), "bfloat16")},
    "layernorm": {"x": ((256, 1024), "bfloat16")},
    "swiglu": {
        "xT": ((256, 256), "bfloat16"),
        "w_gate": ((256, 1024), "bfloat16"),
        "w_up": ((256, 1024), "bfloat16"),
    },
}
SHIPPED = sorted(p.parent.name for p in IR_DIR.glob("*/workload.py"))


def workload(name: str) -> Workload:
    return load_workload(IR_DIR / name / "workload.py")


def small_workload(name: str) -> Workload:
    return dataclasses.replace(workload(name), input_specs=SMALL_SPECS[name])


def small_ir(name: str) -> KernelIR:
    w = small_workload(name)
    return build_ir(w.f_nkigym, w.input_specs, name=name)


def sampler_with_nothing_learnt(monkeypatch) -> ModuleType:
    """kernelopt.ir.sample with the valid states, failed searches and ordered-first
    graphs it remembers per process emptied for one test (restored after it)."""
    sampling = importlib.import_module("kernelopt.ir.sample")
    monkeypatch.setattr(sampling, "_ANCHORS", {})
    monkeypatch.setattr(sampling, "_UNSAMPLEABLE", {})
    monkeypatch.setattr(sampling, "_ORDERED_FIRST", set())
    return sampling


def variant_failures(
    path: Path, name: str, seeds: int = 1, skip_unsampleable: bool = False
) -> tuple[int, list[str]]:
    """How many states of every rewrite variant of the workload at ``path`` were drawn
    (``seeds`` per variant), rendered and checked on the simulator, and what failed. With
    ``skip_unsampleable`` a variant without a state is skipped, as `ir sample` skips it."""
    import random

    from kernelopt.ir import REWRITES, enumerate_rewrite_combinations, render_ir, sample
    from kernelopt.ir.sample import SampleError
    from kernelopt.sim import check_kernel

    w = load_workload(path)
    base = build_ir(w.f_nkigym, w.input_specs, name=name)
    checked, failures = 0, []
    for variant, ir in enumerate_rewrite_combinations(base, list(REWRITES.values())):
        for seed in range(seeds):
            try:
                state = sample(ir, random.Random(seed))
            except SampleError:
                if skip_unsampleable:
                    break
                raise
            kernel = path.parent / f"{variant}_{seed}.py"
            kernel.write_text(render_ir(state))
            report = check_kernel(kernel, w)
            checked += 1
            if not report.correct:
                failures.append(f"{variant} seed {seed}: {report.error_kind}: {report.error}")
    return checked, failures
