"""Where a search over a workload's knob states starts: a pool screened on the simulator.

Every rewrite variant's default knobs and a few joint draws of each are
rendered and timed by the simulator's cost model (trace only: no array math,
the same timing), and ranked by that estimate. ``kernelopt ir init`` writes the
best of them as a workload's first knobs.json and kernel.py; the NKI proposer
measures the best few first. The estimate is a prior, not a measurement: on a
device it only orders the first candidates.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelopt.ir.derive import derive
from kernelopt.ir.footprint import fits
from kernelopt.ir.model import KernelIR
from kernelopt.ir.render import render_ir
from kernelopt.ir.sample import SampleError, knob_signature, sample
from kernelopt.workload import Workload, make_inputs

Timer = Callable[[KernelIR], float | None]


class SimTimer:
    """A knob state's simulated time in seconds (None when the simulator refuses it,
    e.g. out of SBUF), each rendered kernel simulated once."""

    def __init__(self, workload: Workload) -> None:
        from kernelopt.ir.mac import compute_mac_count

        self.inputs = make_inputs(workload.input_specs, 0)
        self.macs = compute_mac_count(workload.f_nkigym, workload.input_specs)
        self.cache: dict[str, float | None] = {}
        self.dir = Path(tempfile.mkdtemp(prefix="kernelopt-start-"))

    def __call__(self, ir: KernelIR) -> float | None:
        from kernelopt.sim import SimError, run_kernel

        source = render_ir(ir)
        if source not in self.cache:
            path = self.dir / "kernel.py"
            path.write_text(source)
            try:
                run = run_kernel(path, self.inputs, compute=False, mac_count=self.macs)
                self.cache[source] = float(run.profile["total_time"])
            except SimError:
                self.cache[source] = None
        return self.cache[source]


@dataclass(frozen=True)
class Start:
    """One screened state and its estimated time (seconds)."""

    ir: KernelIR
    seconds: float


def pool(variants: Sequence[KernelIR], rng: random.Random, size: int) -> list[KernelIR]:
    """Each variant's default knobs, then joint draws over the variants in turn (likely to
    fit only), ``size`` states in all, each knob state once."""
    states: dict[str, KernelIR] = {}
    for ir in variants:
        if not derive(ir)[1]:
            states.setdefault(knob_signature(ir), ir)
    live = [v for v in variants if not _dtype_invalid(v)]
    misses = 0
    while live and len(states) < size and misses < 20 * size:
        try:
            ir = sample(live[len(states) % len(live)], rng)
        except SampleError:
            misses += 1
            continue
        sig = knob_signature(ir)
        if sig in states or not fits(ir):
            misses += 1
            continue
        states[sig] = ir
    return list(states.values())[: max(size, len(variants))]


def _dtype_invalid(ir: KernelIR) -> bool:
    return any(f.check == "isa_dtype" for f in derive(ir)[1])


def ranked(states: Sequence[KernelIR], timer: Timer) -> list[Start]:
    """The states the timer could time, fastest first (ties keep the pool's order)."""
    timed = [(timer(ir), i, ir) for i, ir in enumerate(states)]
    return [Start(ir, t) for t, _, ir in sorted(x for x in timed if x[0] is not None)]


INIT_POOL = 24  # states `kernelopt ir init` screens by default


def initial_state(
    workload: Workload, pool_size: int = INIT_POOL, seed: int = 0
) -> tuple[KernelIR, float | None]:
    """The knob state a workload's tuning starts from, and its estimated time.

    The best of ``pool_size`` screened states over every rewrite variant; with
    ``pool_size`` 0 (or nothing the simulator can time) the base IR's default knobs.
    """
    from kernelopt.ir.knobs_io import ir_for_workload
    from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations

    base = ir_for_workload(workload)
    if pool_size <= 0:
        return base, None
    variants = [ir for _, ir in enumerate_rewrite_combinations(base, list(REWRITES.values()))]
    starts = ranked(pool(variants, random.Random(seed), pool_size), SimTimer(workload))
    return (starts[0].ir, starts[0].seconds) if starts else (base, None)


def init_paths(workload: Path) -> tuple[Path, Path]:
    """Where a workload's knobs.json and kernel.py go: beside it (``ir/<name>/workload.py``
    gets ``knobs.json`` and ``kernel.py``; ``foo.py`` gets ``foo_knobs.json``, ``foo_kernel.py``)."""
    if workload.name == "workload.py":
        return workload.parent / "knobs.json", workload.parent / "kernel.py"
    return (
        workload.parent / f"{workload.stem}_knobs.json",
        workload.parent / f"{workload.stem}_kernel.py",
    )
