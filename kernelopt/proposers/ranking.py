"""Which knob to sweep next around BEST, and in what order its settings: by the work
each setting leaves on the busiest engine (``kernelopt.ir.cost``).

The bound is what the profile would point at, counted before measuring: a
setting that repeats less work, reloads less or issues fewer, wider
instructions on the engine that binds lowers it. Knobs with a setting that
lowers BEST's bound are swept first, most promising first; the others keep the
order the profile rule gave them (``moves.knobs_of``), and so does every knob
of a kernel whose states all do the same work (a norm's knobs move its
schedule, which the bound does not see). Within a sweep the settings are
ordered by their bound, nearest-first order breaking ties. (The proposer sweeps
a knob that has just won again first, whatever its rank.)
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from typing import Any

from kernelopt.ir.cost import engine_times
from kernelopt.ir.model import KernelIR
from kernelopt.proposers.moves import sweep

SETTINGS_PER_KNOB = 16  # settings of one knob weighed around one BEST
GAIN = 0.02  # a setting must lower the bound by this share to reorder the knobs


ENGINES = {
    "tensor": "tensor_engine_active_time_percent",
    "vector": "vector_engine_active_time_percent",
    "scalar": "scalar_engine_active_time_percent",
    "dma": "dma_active_time_percent",
}


def binding_engine(profile: dict[str, Any]) -> str | None:
    """The engine a measured profile says is busiest (None when it does not say)."""
    busy = {e: profile.get(k) for e, k in ENGINES.items()}
    known = {e: float(v) for e, v in busy.items() if isinstance(v, int | float)}
    return max(known, key=lambda e: known[e]) if known else None


def bound_of(ir: KernelIR, engine: str | None = None) -> float:
    """The busiest engine's work (or ``engine``'s: the one a measurement says binds)."""
    times = engine_times(ir)
    if times is None:
        return float("inf")
    return times.bound if engine is None else float(getattr(times, engine))


def ranked_sweeps(
    best: KernelIR,
    knobs: Sequence[str],
    rng: random.Random,
    worth: Callable[[KernelIR], bool],
    cache: dict[str, list[tuple[float, KernelIR]]] | None = None,
    engine: str | None = None,
) -> list[tuple[str, list[KernelIR]]]:
    """Every knob with its new settings, bound-ordered; knobs that promise a lower bound first.

    With ``engine`` (the one BEST's measured profile says binds), the work counted
    is that engine's: the moves follow the measurement where it and the count differ.
    ``cache`` (per BEST and engine) keeps each knob's settings and bounds between
    calls: only ``worth`` is asked again (what was tried since).
    """
    cache = {} if cache is None else cache
    here = bound_of(best, engine)
    found: list[tuple[bool, float, int, str, list[KernelIR]]] = []
    for index, knob in enumerate(knobs):
        if knob not in cache:
            settings = list(itertools.islice(sweep(best, knob, rng), SETTINGS_PER_KNOB))
            bounds = [bound_of(ir, engine) for ir in settings]
            order = sorted(range(len(settings)), key=lambda i: (bounds[i], i))
            cache[knob] = [(bounds[i], settings[i]) for i in order]
        fresh = [(b, ir) for b, ir in cache[knob] if worth(ir)]
        lowest = fresh[0][0] if fresh else float("inf")
        promising = lowest < here * (1 - GAIN)
        found.append(
            (not promising, lowest if promising else 0.0, index, knob, [ir for _, ir in fresh])
        )
    found.sort(key=lambda f: f[:3])
    return [(knob, settings) for *_, knob, settings in found]
