"""The NKI proposer's first batch: the best states of a pool screened on the simulator.

Before anything is measured, a pool of valid states (every rewrite variant's
default knobs and streaming templates, and joint draws, the leanest by their
engines' work first: ``kernelopt.ir.start.pool``) is timed by the simulator's
cost model, then the best one's knobs on every other variant (``start.twins``). The
first batch is the best of them, at most one per variant while
another variant comes within ``MARGIN`` of the best estimate, so the rewrites
are weighed at once rather than after the knobs around one of them. On a
device the estimate is a prior, which the measurements then correct; on the
``sim`` device it is the cost model the device itself runs.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernelopt.ir.effective import effective_key
from kernelopt.ir.model import KernelIR
from kernelopt.ir.sample import knob_signature
from kernelopt.ir.start import SCREEN_SECONDS, Timer, pool, ranked, twins
from kernelopt.progress import ScreenTicker

if TYPE_CHECKING:
    from kernelopt.sampling import Reporter

START_POOL = 24  # pool slots screened before the first batch (each variant's defaults come on top)
FIRST = 3  # states measured first
MARGIN = 1.15  # a variant's best within this factor of the best estimate is measured first too
LEADERS = 1  # screened states whose knobs are also screened on every other variant


@dataclass(frozen=True)
class Pick:
    """A screened state for the first batch and the line that says why."""

    ir: KernelIR
    hypothesis: str
    seconds: float  # the screen's estimate


class ScreenEvents(ScreenTicker):
    """How far the first batch's screen is, as a ``screening`` event to the run's
    reporter every few seconds (phase ``drawing``, then ``simulating``): where valid
    states are rare, the pool takes most of a minute before the first candidate."""

    def __init__(self, reporter: Reporter) -> None:
        def emit(phase: str, done: int, total: int, seconds: float) -> None:
            reporter.event(
                "screening", phase=phase, done=done, total=total, seconds=round(seconds, 1)
            )

        super().__init__(emit)


def first_batch(
    variants: Sequence[KernelIR],
    timer: Timer,
    rng: random.Random,
    size: int,
    new: Callable[[KernelIR], bool],
    extra: Sequence[KernelIR] = (),
    events: ScreenEvents | None = None,
) -> list[Pick]:
    """Up to ``FIRST`` screened states, best first; only those ``new`` accepts (not tried,
    no kernel measured or picked already under other knobs).

    ``extra`` (the baseline's own state) joins the pool, so a start worse than
    the baseline by the estimate is not measured first. ``events`` hears how far the
    pool's drawing and simulating are.
    """
    drawing = events.drawing if events is not None else None
    states = [*pool(variants, rng, size, drawing), *extra]
    deadline = time.monotonic() + SCREEN_SECONDS  # for simulating; drawing is apart
    starts = ranked(states, timer, deadline, events)
    if not starts:
        return []
    # The leaders' knobs on every other variant too: a rewrite is best weighed at the
    # knobs that suit the kernel, not only at its own defaults and draws.
    seen = {knob_signature(s.ir) for s in starts}
    twinned = {knob_signature(t): t for s in starts[:LEADERS] for t in twins(s.ir, variants)}
    fresh = {sig: t for sig, t in twinned.items() if sig not in seen}
    if fresh:
        twins_ranked = ranked(list(fresh.values()), timer, deadline)
        starts = sorted([*starts, *twins_ranked], key=lambda s: s.seconds)
    total, best = len(starts), starts[0].seconds
    picks: list[Pick] = []
    variants_picked: set[str] = set()
    keys: set[str | None] = set()
    picked: list = []  # the picks' Start records
    for rank, start in enumerate(starts, 1):
        if len(picks) >= FIRST:
            break
        ir = start.ir
        key = effective_key(ir)
        if not new(ir) or key in keys:
            continue  # the baseline itself (measured already), or a pick under other knobs
        if any(abs(start.seconds - p.seconds) <= 1e-12 for p in picked):
            continue  # the estimate cannot tell it from a pick: measure something else
        near = start.seconds <= best * MARGIN
        if picks and not near:
            break
        if ir.variant in variants_picked and any(
            s.ir.variant not in variants_picked and s.seconds <= best * MARGIN for s in starts
        ):
            continue  # another variant is as promising: weigh it first
        variants_picked.add(ir.variant)
        keys.add(key)
        picked.append(start)
        how = f"screened start {rank} of {total}: variant {ir.variant}"
        picks.append(Pick(ir, f"{how}, sim estimate {start.seconds * 1e6:.3g} us", start.seconds))
    return picks
