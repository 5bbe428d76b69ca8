"""The run's state one decided attempt later, without reading the whole history again.

``RunState`` works out what it derives from its attempts (BEST, the baseline,
the pooled spread, the dedup index, the next attempt's number) once per state,
each by a pass over every attempt. The runner makes a new state per candidate,
so those passes made every candidate cost more as the history grew. ``advance``
builds the next state and hands it what the previous state knew, updated by
the one new attempt; the rules themselves stay RunState's (each is applied to
the new attempt alone). A state loaded from git still works everything out
from its notes.
"""

from __future__ import annotations

import math

from kernelopt.decide import Spread
from kernelopt.history import AttemptRecord, RunState

# What RunState caches per instance (functools.cached_property keeps each in
# the instance's __dict__ under its own name).
_DERIVED = ("best", "baseline", "spread", "_by_content", "next_attempt")


def advance(
    state: RunState,
    record: AttemptRecord,
    best_commit: str | None,
    pending: tuple[tuple[int, str], ...],
) -> RunState:
    """``state`` with ``record`` appended, ``best_commit`` and ``pending``; no stop."""
    after = RunState(state.run_id, best_commit, (*state.attempts, record), pending, None)
    alone = RunState(state.run_id, best_commit, (record,))
    known = vars(after)
    known["best"] = alone.best or state.best
    known["baseline"] = state.baseline or alone.baseline
    known["spread"] = _pooled(state.spread, record)
    known["_by_content"] = {**state.by_content(), **alone.by_content()}
    known["next_attempt"] = max(state.next_attempt, record.attempt + 1)
    return after


def _pooled(spread: Spread, record: AttemptRecord) -> Spread:
    """``spread`` pooled with the new attempt's own, as ``RunState.spread`` pools them."""
    s = record.note.get("spread")
    if s and math.isfinite(float(s["var"])):  # one nonsense spread must not widen all
        return spread.pooled(Spread(float(s["var"]), int(s["df"])))
    return spread


__all__ = ["advance"]
