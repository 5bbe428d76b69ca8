"""A run's state as its refs and notes tell it: each attempt's record and what
is derived from them (BEST, the baseline, BEST's figure, counters, pooled spread,
dedup by content). ``RunRepo.load_state`` in history.py reads them from git.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from kernelopt.decide import BestFigure, Counters, Spread, Verdict
from kernelopt.heal import damage


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt as its note tells it."""

    attempt: int
    commit: str
    note: dict[str, Any]

    @property
    def verdict(self) -> str:
        return str(self.note.get("verdict", ""))

    @property
    def kind(self) -> str:
        return str(self.note.get("kind", ""))

    @property
    def hypothesis(self) -> str:
        return str(self.note.get("hypothesis", ""))

    @property
    def metric(self) -> float | None:
        value = self.note.get("metric")
        return float(value) if value is not None else None

    @property
    def measurement(self) -> dict[str, Any]:
        return dict(self.note.get("measurement") or {})

    @property
    def counters(self) -> Counters:
        return Counters.from_json(self.note.get("counters") or {})


@dataclass(frozen=True)
class RunState:
    """Everything the runner knows, rebuilt from refs and notes alone (never changed:
    what is derived from it is worked out once)."""

    run_id: str
    best_commit: str | None
    attempts: tuple[AttemptRecord, ...] = ()
    pending: tuple[tuple[int, str], ...] = ()  # attempt refs with no note yet
    stop: dict[str, Any] | None = None
    # Attempts whose note is unreadable and has no readable earlier version: (n, sha, why).
    corrupt: tuple[tuple[int, str, str], ...] = ()
    # Attempts whose note is unreadable, read from its earlier version instead: (n, sha, why).
    restored: tuple[tuple[int, str, str], ...] = ()

    @property
    def warnings(self) -> list[str]:
        """What ``status``, ``log`` and ``run`` say about unreadable notes."""
        return damage(self.restored, self.corrupt, self.best_commit is None and bool(self.best))

    @property
    def started(self) -> bool:
        return self.best_commit is not None

    @functools.cached_property
    def best(self) -> AttemptRecord | None:
        for record in reversed(self.attempts):
            if record.verdict in (Verdict.KEEP, Verdict.BASELINE):
                return record
        return None

    @property
    def best_figure(self) -> BestFigure:
        """BEST's metric as one estimate over all its samples (the newest note carries it)."""
        best = self.best
        if best is None:
            return BestFigure(None, 0)
        newest = self.attempts[-1].note
        if "best_samples" in newest and newest.get("best_metric") is not None:
            return BestFigure(float(newest["best_metric"]), int(newest["best_samples"]))
        return BestFigure(best.metric, 1)  # notes written before the estimate existed

    @property
    def best_metric(self) -> float | None:
        """BEST's figure: what every view shows as BEST's metric."""
        return self.best_figure.metric

    @property
    def baseline_metric(self) -> float | None:
        """The baseline's figure: its estimate over all its samples while it was BEST."""
        base = self.baseline
        if base is None:
            return None
        best = self.best
        if best is not None and best.attempt == base.attempt:
            return self.best_metric
        for record in self.attempts:
            if record.attempt > base.attempt and record.verdict == Verdict.KEEP:
                previous = record.note.get("previous_best")
                if "best_samples" in record.note and previous is not None:
                    return float(previous)
                break
        return base.metric

    @functools.cached_property
    def baseline(self) -> AttemptRecord | None:
        for record in self.attempts:
            if record.verdict == Verdict.BASELINE:
                return record
        return None

    @property
    def counters(self) -> Counters:
        return self.attempts[-1].counters if self.attempts else Counters()

    @functools.cached_property
    def next_attempt(self) -> int:
        numbers = [r.attempt for r in self.attempts] + [n for n, _ in self.pending]
        return max(numbers, default=-1) + 1

    @functools.cached_property
    def spread(self) -> Spread:
        pooled = Spread()
        for record in self.attempts:
            s = record.note.get("spread")
            if s and math.isfinite(float(s["var"])):  # one nonsense spread must not widen all
                pooled = pooled.pooled(Spread(float(s["var"]), int(s["df"])))
        return pooled

    def by_content(self) -> dict[str, AttemptRecord]:
        """The latest measured attempt per content key (for dedup; do not change it)."""
        return self._by_content

    @functools.cached_property
    def _by_content(self) -> dict[str, AttemptRecord]:
        out: dict[str, AttemptRecord] = {}
        for record in self.attempts:
            key = record.note.get("content_key")
            if key and record.verdict not in ("interrupted", "failed", "refused"):
                out[key] = record
        return out
