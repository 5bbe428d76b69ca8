"""The state the runner advances per candidate says what a state rebuilt from the
same attempts says, and the proposer's view built incrementally equals a fresh one."""

from __future__ import annotations

from typing import Any

from kernelopt.history import AttemptRecord, RunState
from kernelopt.proposers.base import Observations
from kernelopt.state_step import advance


def _note(verdict: str, **extra: Any) -> dict[str, Any]:
    return {"verdict": verdict, "kind": "knob", "metric": 100.0, **extra}


# A history with every case the derived values care about: a failed baseline
# before the real one, keeps, dedup keys repeated and on failed/refused
# attempts, a nonsense spread, missing spreads.
NOTES = [
    _note("failed", content_key="a"),
    _note("baseline", content_key="a", spread={"var": 0.01, "df": 2}),
    _note("tie", content_key="b", spread={"var": 0.1, "df": 3}, signature="s1"),
    _note("keep", content_key="c", spread={"var": float("nan"), "df": 5}, signature="s2"),
    _note("refused", content_key="b", signature="s3"),
    _note("regression", content_key="b", spread={"var": 0.3, "df": 1}, signature="s1"),
    _note("interrupted", content_key="c"),
    _note("keep", content_key="d", spread={"var": 0.07, "df": 7}),
    _note("tie", signature="s4"),
]


def _derived(state: RunState) -> tuple[Any, ...]:
    return (
        state.best,
        state.baseline,
        state.spread,
        state.by_content(),
        state.next_attempt,
        state.best_metric,
        state.baseline_metric,
        state.counters,
    )


def test_advanced_state_equals_the_rebuilt_one_after_every_attempt() -> None:
    records = [AttemptRecord(n, f"{n:040x}", note) for n, note in enumerate(NOTES)]
    state = RunState("r", None, (), ((7, "p" * 40), (12, "q" * 40)))
    for record in records:
        pending = tuple(p for p in state.pending if p[0] != record.attempt)
        best = record.commit if record.verdict in ("keep", "baseline") else state.best_commit
        state = advance(state, record, best, pending)
        rebuilt = RunState("r", best, state.attempts, pending)
        assert _derived(state) == _derived(rebuilt)
    assert state.best is records[7] and state.baseline is records[1]
    assert state.next_attempt == 13  # a pending attempt beyond the decided ones
    assert state.by_content()["b"] is records[5]  # the refused one is not a dedup source


def test_incremental_proposer_view_equals_a_fresh_one() -> None:
    records = [AttemptRecord(n, f"{n:040x}", note) for n, note in enumerate(NOTES)]
    kept = Observations()
    state = RunState("r", None)
    for record in records:
        state = advance(state, record, record.commit, ())
        view = kept.state(state, "lower", 3)
        assert view == Observations().state(state, "lower", 3)
    assert view.tried == frozenset({"s1", "s2", "s3", "s4"})
    # A shorter history (loaded again from git) is not mistaken for an extension.
    shorter = RunState("r", records[3].commit, tuple(records[:4]))
    assert kept.state(shorter, "lower", 3) == Observations().state(shorter, "lower", 3)
    assert kept.state(shorter, "lower", 3).tried == frozenset({"s1", "s2"})
