"""When a run stops: target reached, candidate or time budget used, or this invocation's limit.

Pure functions of the program, the run's state and the clock. (The regression
counter's stop is decided with the counters, in decide.py.)
"""

from __future__ import annotations

import datetime as dt

from kernelopt.history import RunState
from kernelopt.program import Program


def run_stop_reason(
    program: Program, state: RunState, now: dt.datetime | None = None
) -> str | None:
    """Why the run itself is over (target reached, candidate or time budget used), or None.

    These reasons hold for every verb: once one holds, the stop is recorded
    and neither ``run`` nor ``try`` commits another candidate.
    """
    stop = program.stop
    best = state.best
    if stop.target is not None and best is not None and best.metric is not None:
        reached = (
            best.metric >= stop.target if program.better == "higher" else best.metric <= stop.target
        )
        if reached:
            return f"target reached: {program.metric} {best.metric:.4g} (target {stop.target:g})"
    attempts = state.counters.attempts
    if stop.max_candidates is not None and attempts >= stop.max_candidates:
        return f"candidate budget used: {attempts} of {stop.max_candidates}"
    if stop.max_hours is not None and state.baseline is not None:
        t0 = dt.datetime.fromisoformat(str(state.baseline.note.get("time")))
        hours = ((now or dt.datetime.now(dt.UTC)) - t0).total_seconds() / 3600
        if hours >= stop.max_hours:
            return f"time budget used: {hours:.2f} h of {stop.max_hours:g} h"
    return None


def stop_reason(
    program: Program,
    state: RunState,
    invoked: int = 0,
    max_candidates: int | None = None,
    now: dt.datetime | None = None,
) -> str | None:
    """Why this invocation should stop before its next candidate, or None.

    The run's own reasons first (``run_stop_reason``), then ``--max-candidates``:
    ``invoked`` counts the candidates this invocation tried. Only the run's
    reasons end the run; the invocation's limit ends this command.
    """
    if reason := run_stop_reason(program, state, now):
        return reason
    if max_candidates is not None and invoked >= max_candidates:
        return f"--max-candidates {max_candidates} reached"
    return None


def candidates_left(
    program: Program, state: RunState, invoked: int, max_candidates: int | None
) -> int | None:
    """How many more candidates the budgets allow (None: no limit; at least 1 while running)."""
    left = None if max_candidates is None else max_candidates - invoked
    if program.stop.max_candidates is not None:
        run_left = program.stop.max_candidates - state.counters.attempts
        left = run_left if left is None else min(left, run_left)
    return None if left is None else max(left, 1)
