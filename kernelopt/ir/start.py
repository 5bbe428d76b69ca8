"""Where a search over a workload's knob states starts: a pool screened on the simulator.

Every rewrite variant's default knobs and a few joint draws of each are
rendered and timed by the simulator's cost model (trace only: no array math,
the same timing), and ranked by that estimate. ``kernelopt ir init`` writes the
best of them as a workload's first knobs.json and kernel.py; the NKI proposer
measures the best few first. The estimate is a prior, not a measurement: on a
device it only orders the first candidates.
"""

from __future__ import annotations

import itertools
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from kernelopt.ir.derive import derive
from kernelopt.ir.footprint import capacity_problem, fits, shrink_to_fit
from kernelopt.ir.model import Dim, KernelIR, PhysicalBuffer, Scope
from kernelopt.ir.render import render_ir
from kernelopt.ir.sample import SampleError, knob_signature, sample
from kernelopt.ir.validate import repaired
from kernelopt.progress import ScreenTicker
from kernelopt.workload import Workload, make_inputs

Timer = Callable[[KernelIR], float | None]
DRAWS_PER_SLOT = 12  # joint draws per pool slot, ranked by their engines' work


class SimTimer:
    """A knob state's simulated time in seconds (None when the simulator refuses it,
    e.g. out of SBUF), each rendered kernel simulated once."""

    def __init__(self, workload: Workload) -> None:
        from kernelopt.ir.mac import compute_mac_count

        self.inputs = make_inputs(workload.input_specs, 0)
        self.macs = compute_mac_count(workload.f_nkigym, workload.input_specs)
        self.cache: dict[str, float | None] = {}
        self.refusals: list[str] = []  # why the simulator refused a kernel, in order
        # Removed when the timer is dropped or the interpreter exits, not left in /tmp.
        self._scratch = tempfile.TemporaryDirectory(prefix="kernelopt-start-")
        self.dir = Path(self._scratch.name)

    def __call__(self, ir: KernelIR) -> float | None:
        from kernelopt.sim import SimError, run_kernel

        source = render_ir(ir)
        if source not in self.cache:
            path = self.dir / "kernel.py"
            path.write_text(source)
            try:
                run = run_kernel(path, self.inputs, compute=False, mac_count=self.macs)
                self.cache[source] = float(run.profile["total_time"])
            except SimError as exc:
                self.cache[source] = None
                self.refusals.append(str(exc))
        return self.cache[source]


@dataclass(frozen=True)
class Start:
    """One screened state and its estimated time (seconds)."""

    ir: KernelIR
    seconds: float


def templates(ir: KernelIR) -> list[KernelIR]:
    """Streaming layouts of one variant, the shape a hand-written kernel usually has.

    One parallel dim ``o`` is walked outermost, tile by tile, and every buffer holds
    one tile of it (so the loads of the next rows overlap the work on these);
    the other dims follow, parallel ones before reducing ones or after, each in one
    block or tile by tile, and every buffer holds them whole, or, PSUM being small
    (8 banks), every accumulator holds one tile of them. And with ``o``'s blocks
    outermost, the output walked in blocks of two tiles of every parallel dim. States
    the validity report cannot repair, or that would not fit, are left out.
    """
    parallel = [d for d in ir.dims if not d.reducing]
    reducing = [d for d in ir.dims if d.reducing]
    found: dict[str, KernelIR] = {}
    for o in (d for d in parallel if d.num_tiles > 1):
        rest = [d for d in parallel if d is not o]
        for others in dict.fromkeys((tuple(rest + reducing), tuple(reducing + rest))):
            order = [f"{o.name}.block", f"{o.name}.tile"]
            order += [f"{d.name}.{k}" for d in others for k in ("block", "tile")]
            for whole, psum_tiles in itertools.product((False, True), repeat=2):
                blocks = {d.name: d.num_tiles if whole else 1 for d in others}
                scopes = {
                    b.name: {d: _template_scope(b, d, o.name, psum_tiles) for d in b.knob_dims}
                    for b in ir.buffers
                }
                state = repaired(ir.with_knobs(order, {**blocks, o.name: 1}, scopes))
                if state is not None and fits(state):
                    found.setdefault(knob_signature(state), state)
        blocked = _blocked(ir, [o, *rest], reducing)
        if blocked is not None:
            found.setdefault(knob_signature(blocked), blocked)
    return list(found.values())


def _blocked(ir: KernelIR, parallel: list[Dim], reducing: list[Dim]) -> KernelIR | None:
    """The output walked in blocks of two tiles per parallel dim (``parallel[0]``'s blocks
    outermost), each block's tiles inside, every buffer holding the block and the
    reducing dims whole: the tiling of a blocked GEMM, applied to the graph."""
    order = [f"{d.name}.block" for d in parallel] + [f"{d.name}.tile" for d in parallel]
    order += [f"{d.name}.{k}" for d in reducing for k in ("block", "tile")]
    blocks = {d.name: 2 if d.num_tiles % 2 == 0 else 1 for d in parallel}
    blocks.update({d.name: d.num_tiles for d in reducing})
    scopes = {
        b.name: {
            d: Scope.FULL if ir.dim[d].reducing or d in b.lifetime_dims else Scope.PER_BLOCK
            for d in b.knob_dims
        }
        for b in ir.buffers
    }
    state = repaired(ir.with_knobs(order, blocks, scopes))
    return state if state is not None and fits(state) else None


def _template_scope(buf: PhysicalBuffer, d: str, outer: str, psum_tiles: bool) -> Scope:
    if d in buf.lifetime_dims:
        return Scope.FULL
    if d == outer or (psum_tiles and buf.memory == "psum"):
        return Scope.PER_TILE
    return Scope.FULL


Progress = Callable[[int, int], None]  # (states timed so far, states in the pool)


def pool(
    variants: Sequence[KernelIR],
    rng: random.Random,
    size: int,
    drawing: Progress | None = None,
) -> list[KernelIR]:
    """The states a start is screened from, each knob state once.

    Every variant's default knobs and streaming templates, then joint draws (each
    narrowed until it fits, ``footprint.shrink_to_fit``): of ``DRAWS_PER_SLOT * size``
    draws, the ``size // 2`` whose busiest engine has the least work
    (``cost.engine_times``: repeated work and reloads show there) and ``size // 4``
    others, so the count does not steer alone. ``drawing`` hears (draws kept, draws
    wanted) after each attempt: where valid states are rare, drawing takes a minute.
    """
    from kernelopt.ir.cost import engine_times

    states: dict[str, KernelIR] = {}
    for ir in variants:
        if not derive(ir)[1]:
            states.setdefault(knob_signature(ir), ir)
    if size <= 0:
        return list(states.values())
    for ir in variants:
        for state in templates(ir):
            states.setdefault(knob_signature(state), state)
    live = [v for v in variants if not _dtype_invalid(v)]
    draws: dict[str, KernelIR] = {}
    misses = 0
    unsampled: list[str] = []  # why each variant dropped out
    while live and len(draws) < DRAWS_PER_SLOT * size and misses < 20 * size:
        if drawing is not None:
            drawing(len(draws), DRAWS_PER_SLOT * size)
        variant = live[(len(draws) + misses) % len(live)]
        try:
            ir = sample(variant, rng)
        except SampleError as exc:
            # Found by neither draws nor climbs: further draws would not find one either.
            live.remove(variant)
            unsampled.append(str(exc))
            continue
        fitting = shrink_to_fit(ir)
        sig = knob_signature(fitting) if fitting is not None else ""
        if fitting is None or sig in states or sig in draws:
            misses += 1
            continue
        draws[sig] = fitting
    if drawing is not None:
        drawing(len(draws), DRAWS_PER_SLOT * size)
    bound = {sig: engine_times(ir).bound for sig, ir in draws.items()}  # type: ignore[union-attr]
    lean = sorted(draws, key=lambda sig: bound[sig])[: size // 2]
    others = [sig for sig in draws if sig not in lean]
    picks = lean + rng.sample(others, min(len(others), size // 4))
    for sig in picks:
        states.setdefault(sig, draws[sig])
        for twin in twins(draws[sig], variants):
            states.setdefault(knob_signature(twin), twin)
    if not states:
        why = unsampled[0] if unsampled else _first_failure(variants[0])
        raise SampleError(
            f"no rewrite variant of {variants[0].func_name} has a valid knob state; {why}"
        )
    return list(states.values())


def _surface(ir: KernelIR) -> tuple[object, ...]:
    return (ir.dims, tuple((b.name, b.knob_dims) for b in ir.buffers))


def twins(state: KernelIR, variants: Sequence[KernelIR]) -> list[KernelIR]:
    """``state``'s knobs on every other variant, where they are valid and fit. A variant
    with the same knob surface (the same dims and buffers: a rewrite that only changes
    which instruction computes a value, as ActivationReduce does) takes them as they
    are; one that differs (a transpose by DMA instead of TensorE drops a PSUM buffer)
    takes the loop order, the blocking of the dims both have and the scopes of the
    buffers both have, its own defaults elsewhere, repaired where that is invalid.
    Each state is then screened every way: which way is faster depends on how the
    engines overlap, which the work count that picks the draws does not see."""
    found = []
    for v in variants:
        if v.variant == state.variant:
            continue
        if _surface(v) == _surface(state):
            twin: KernelIR | None = v.with_knobs(
                state.loop_order, state.ltiles_per_block, state.buffer_scopes
            )
            if derive(twin)[1]:
                continue
        else:
            twin = _projected(state, v)
        if twin is not None and fits(twin):
            found.append(twin)
    return found


def _projected(state: KernelIR, variant: KernelIR) -> KernelIR | None:
    """``state``'s knobs carried onto ``variant`` where its dims and buffers match, and
    repaired: a valid state, or None."""
    if sorted(state.loop_order) != sorted(variant.loop_order):
        return None  # different dims: no loop order to carry
    blocking = {d: state.ltiles_per_block.get(d, n) for d, n in variant.ltiles_per_block.items()}
    scopes = {
        name: dict(state.buffer_scopes[name])
        if name in state.buffer_scopes and set(state.buffer_scopes[name]) == set(own)
        else own
        for name, own in variant.buffer_scopes.items()
    }
    return repaired(variant.with_knobs(state.loop_order, blocking, scopes))


def _dtype_invalid(ir: KernelIR) -> bool:
    return any(f.check == "isa_dtype" for f in derive(ir)[1])


def _first_failure(ir: KernelIR) -> str:
    """The first rule ``ir``'s knobs break, as ``kernelopt ir validate`` names it."""
    from kernelopt.ir.validate import DTYPE_HINT

    f = derive(ir)[1][0]
    hint = f" ({DTYPE_HINT})" if f.check == "isa_dtype" else ""
    return f"{f.check}({f.buffer}): {f.detail}{hint}"


def ranked(
    states: Sequence[KernelIR],
    timer: Timer,
    deadline: float | None = None,
    progress: Progress | None = None,
) -> list[Start]:
    """The states the timer could time, fastest first (ties keep the pool's order).

    With a ``deadline`` (``time.monotonic()``), the states are timed in the order of
    their counted work (``cost.engine_times``), those that fit on chip by the all-live
    estimate first, leanest first, and those not reached by then are left out: a kernel
    of 100k instructions takes seconds to simulate, and a pool of them would take longer
    than the run it starts. Past it, states are still timed until one runs.
    ``progress`` is told after each state.
    """
    order = list(enumerate(states))
    if deadline is not None:
        from kernelopt.ir.cost import engine_times

        def key(pair: tuple[int, KernelIR]) -> tuple[bool, float, int]:
            counted = engine_times(pair[1])
            return (not fits(pair[1]), counted.bound if counted else float("inf"), pair[0])

        order.sort(key=key)
    timed: list[tuple[float | None, int, KernelIR]] = []
    ran = False
    if progress is not None:
        progress(0, len(order))  # the pool is drawn
    for i, ir in order:
        if deadline is not None and ran and time.monotonic() > deadline:
            break
        seconds = timer(ir)
        ran = ran or seconds is not None
        timed.append((seconds, i, ir))
        if progress is not None:
            progress(len(timed), len(order))
    return [Start(ir, t) for t, _, ir in sorted(x for x in timed if x[0] is not None)]


INIT_POOL = 24  # states `kernelopt ir init` screens by default
SCREEN_SECONDS = 90.0  # simulating the pool stops after this; leaner-counted states first


class Initial(NamedTuple):
    """Where a workload's tuning starts: the state, its estimated time (None when not
    screened) and how many states the screen simulated."""

    ir: KernelIR
    seconds: float | None
    timed: int = 0


def initial_state(
    workload: Workload,
    pool_size: int = INIT_POOL,
    seed: int = 0,
    progress: ScreenTicker | None = None,
) -> Initial:
    """The knob state a workload's tuning starts from, and its estimated time.

    The best of a pool of ``pool_size`` slots screened over every rewrite variant
    (within ``SCREEN_SECONDS``); with ``pool_size`` 0 the base IR's default knobs. When
    the simulator refuses every screened state (out of SBUF, say), the first refusal is
    raised as a SampleError. ``progress`` hears of each joint draw while the pool is
    drawn (its ``drawing``), then of each state the screen times.
    """
    from kernelopt.ir.knobs_io import ir_for_workload
    from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations

    base = ir_for_workload(workload)
    if pool_size <= 0:
        if derive(base)[1]:
            raise SampleError(
                f"the default knobs of {base.func_name} are not valid: {_first_failure(base)}"
            )
        return Initial(base, None)
    variants = [ir for _, ir in enumerate_rewrite_combinations(base, list(REWRITES.values()))]
    problems = [capacity_problem(ir) for ir in variants]
    if all(problems):
        raise SampleError(f"no knob state of {base.func_name} fits on chip: {problems[0]}")
    timer = SimTimer(workload)
    drawing = progress.drawing if progress is not None else None
    states = pool(variants, random.Random(seed), pool_size, drawing)
    deadline = time.monotonic() + SCREEN_SECONDS  # for simulating; drawing is apart
    starts = ranked(states, timer, deadline, progress)
    if not starts and timer.refusals:
        # The base knobs would fail the same way when the run measures its baseline.
        raise SampleError(
            f"none of the {len(states)} screened knob states of {base.func_name} runs on the "
            f"simulator; the first: {timer.refusals[0]}"
        )
    timed = len(timer.cache)
    return Initial(starts[0].ir, starts[0].seconds, timed) if starts else Initial(base, None, timed)


def init_paths(workload: Path) -> tuple[Path, Path]:
    """Where a workload's knobs.json and kernel.py go: beside it (``ir/<name>/workload.py``
    gets ``knobs.json`` and ``kernel.py``; ``foo.py`` gets ``foo_knobs.json``, ``foo_kernel.py``)."""
    if workload.name == "workload.py":
        return workload.parent / "knobs.json", workload.parent / "kernel.py"
    return (
        workload.parent / f"{workload.stem}_knobs.json",
        workload.parent / f"{workload.stem}_kernel.py",
    )
