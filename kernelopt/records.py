"""The records one run produces: attempts awaiting a verdict, decided attempts, the run's summary.

Plain frozen data. Git holds the truth (history.py); these are what the loop
hands between its steps and what the CLI prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernelopt.decide import Verdict, gain
from kernelopt.history import RunState
from kernelopt.measurement import Measurement

Pair = tuple[Measurement, Measurement | None]
"""One sample: the candidate's measurement and, on a noisy target, BEST's taken beside it."""


@dataclass(frozen=True)
class Pending:
    """An attempt that is committed and waits for its measurement and verdict."""

    n: int
    sha: str
    kind: str
    hypothesis: str
    knobs: dict[str, Any] | None = None
    signature: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AttemptResult:
    """One decided attempt, as the CLI prints it and `try --json` answers."""

    attempt: int
    commit: str
    kind: str
    hypothesis: str
    verdict: str
    metric: float | None
    best_metric: float | None
    previous_best: float | None
    gain: float | None
    consecutive_regressions: int
    recent_regressions: tuple[dict[str, Any], ...]  # as status lists them
    stop: bool
    stop_reason: str | None = None
    error: str = ""
    classes: dict[str, float] = field(default_factory=dict)
    improved: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()
    samples: int = 1
    reused_from: int | None = None
    files: tuple[str, ...] = ()
    # What ``gain`` was measured against (note.basis): re-measured BEST and its pairs,
    # or the recorded BEST.
    basis: dict[str, Any] | None = None
    # Where and how it was measured, and its profile (measured_on).
    measured: dict[str, Any] = field(default_factory=dict)
    # The rule that decided the verdict, in one sentence.
    reason: str = ""
    # The end of a failed benchmark's output (its stderr and stdout).
    output_tail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "commit": self.commit,
            "kind": self.kind,
            "hypothesis": self.hypothesis,
            "verdict": str(self.verdict),
            "metric": self.metric,
            "best_metric": self.best_metric,
            "previous_best": self.previous_best,
            "gain": self.gain,
            "consecutive_regressions": self.consecutive_regressions,
            "recent_regressions": list(self.recent_regressions),
            "reason": self.reason,
            "output_tail": self.output_tail,
            "stop": self.stop,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "classes": self.classes,
            "improved": list(self.improved),
            "regressed": list(self.regressed),
            "samples": self.samples,
            "reused_from": self.reused_from,
            "files": list(self.files),
            "basis": self.basis,
            **self.measured,
        }


@dataclass(frozen=True)
class RunSummary:
    """Where a run ended up when an invocation of the loop returned."""

    run_id: str
    branch: str
    worktree: str
    reason: str
    stopped: bool
    failed: bool
    attempts: int
    kept: int
    regressions: int
    best_commit: str | None  # the best ref: the branch's commit at BEST, as everywhere
    best_metric: float | None
    baseline_metric: float | None
    metric: str
    better: str
    diverged: int = 0
    best_attempt: int | None = None
    baseline_commit: str | None = None

    @classmethod
    def of(
        cls,
        state: RunState,
        *,
        branch: str,
        worktree: str,
        metric: str,
        better: str,
        reason: str,
        stopped: bool = False,
        failed: bool = False,
    ) -> RunSummary:
        best, base = state.best, state.baseline

        def count(verdict: Verdict) -> int:
            return len([r for r in state.attempts if r.verdict == verdict])

        return cls(
            run_id=state.run_id,
            branch=branch,
            worktree=worktree,
            reason=reason,
            stopped=stopped or state.stop is not None,
            failed=failed,
            attempts=len([r for r in state.attempts if r.attempt > 0]),
            kept=count(Verdict.KEEP),
            regressions=count(Verdict.REGRESSION),
            best_commit=state.best_commit if best else None,
            best_attempt=best.attempt if best else None,
            baseline_commit=base.commit if base else None,
            best_metric=state.best_metric,
            baseline_metric=state.baseline_metric,
            metric=metric,
            better=better,
            diverged=count(Verdict.DIVERGED),
        )

    @property
    def improvement(self) -> float | None:
        if self.best_metric is None or self.baseline_metric in (None, 0):
            return None
        return gain(self.best_metric, self.baseline_metric, self.better)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "branch": self.branch,
            "worktree": self.worktree,
            "reason": self.reason,
            "stopped": self.stopped,
            "failed": self.failed,
            "attempts": self.attempts,
            "kept": self.kept,
            "regressions": self.regressions,
            "diverged": self.diverged,
            "best_commit": self.best_commit,
            "best_attempt": self.best_attempt,
            "best_metric": self.best_metric,
            "baseline_metric": self.baseline_metric,
            "improvement": self.improvement,
            "metric": self.metric,
        }


def measured_on(measurement: dict[str, Any]) -> dict[str, Any]:
    """Where and how an attempt was measured, and its profile (the profiler's field names)."""
    extra = measurement.get("extra") or {}
    return {
        "device": measurement.get("device") or "",
        "host": measurement.get("host") or "",
        "timing": measurement.get("timing") or extra.get("timing"),
        "profile": measurement.get("profile") or {},
        # A profile of a run that failed its correctness check (or crashed) describes
        # wrong work: its MFU and engine figures are not comparable with BEST's.
        "profile_of_correct_work": measurement.get("status", "ok") == "ok",
    }


class RunStopped(RuntimeError):
    """The run already stopped; its reason is the message."""


class NothingToTry(RuntimeError):
    """``try`` found no change in the worktree: no attempt is made."""


def resume_notice(state: RunState) -> dict[str, Any]:
    """What a resumed run says first: where it goes on from, BEST and the counters."""
    best = state.best
    pending = sorted(n for n, _ in state.pending)
    return {
        # Attempts committed before the stop are measured first, so numbering goes on from them.
        "next": pending[0] if pending else state.next_attempt,
        "pending": pending,
        "best_attempt": best.attempt if best else None,
        "best_metric": state.best_metric,
        "consecutive_regressions": state.counters.consecutive_regressions,
    }
