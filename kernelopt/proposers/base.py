"""Where candidates come from: the two-verb `Proposer` interface.

The loop never knows which proposer it drives. It asks ``propose(state)`` for
the next batch (``None`` when the proposer has nothing left) and reports each
decided candidate back through ``observe``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kernelopt.decide import Verdict
from kernelopt.measurement import Measurement

if TYPE_CHECKING:
    from kernelopt.history import AttemptRecord, RunState

KNOB = "knob"
EDIT = "edit"
AGENT = "agent"
KINDS = (KNOB, EDIT, AGENT)


def signature_of(knobs: dict[str, Any]) -> str:
    """A stable key for a knob assignment (order of keys does not matter)."""
    blob = json.dumps(knobs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Candidate:
    """One change to try, as file contents relative to the worktree root.

    ``files`` maps a path to its new text; the loop writes them, commits, and
    measures exactly that commit. ``knobs`` is the assignment a knob candidate
    represents (recorded in the note, used for dedup and by proposers).
    ``in_worktree``: the change was made in the run's worktree itself (an
    agent's edit), so the loop commits the worktree as it is, and a worktree
    equal to BEST is a failed attempt. ``failure``: the proposer could not
    produce the change (an agent that crashed); the loop records the attempt
    as that failure without measuring it. ``extra`` goes into the note.
    """

    kind: str
    hypothesis: str
    files: dict[str, str] = field(default_factory=dict)
    knobs: dict[str, Any] | None = None
    signature: str | None = None
    in_worktree: bool = False
    failure: Measurement | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown candidate kind {self.kind!r}")


@dataclass(frozen=True)
class Observation:
    """What the loop learned about one attempt, as proposers see it.

    ``asked`` holds what the attempt answered (``repair_of``, ``repair``,
    ``split_of``: an agent's repair or split of an earlier attempt).
    """

    attempt: int
    kind: str
    verdict: str  # keep | tie | regression | incorrect | failed | diverged | baseline
    metric: float | None
    knobs: dict[str, Any] | None = None
    signature: str | None = None
    profile: dict[str, Any] = field(default_factory=dict)
    commit: str = ""
    hypothesis: str = ""
    gain: float | None = None
    error: str = ""
    classes: dict[str, float] = field(default_factory=dict)
    improved: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()
    asked: dict[str, Any] = field(default_factory=dict)
    reason: str = ""  # the rule that decided the verdict
    output_tail: str = ""  # the end of a failed benchmark's output

    @classmethod
    def of(cls, record: AttemptRecord) -> Observation:
        """An attempt as its note tells it."""
        note = record.note
        measurement = record.measurement
        return cls(
            attempt=record.attempt,
            kind=record.kind,
            verdict=record.verdict,
            metric=record.metric,
            knobs=note.get("knobs"),
            signature=note.get("signature"),
            profile=dict(measurement.get("profile") or {}),
            commit=record.commit,
            hypothesis=record.hypothesis,
            gain=note.get("gain"),
            error=str(note.get("error") or ""),
            classes=dict((measurement.get("extra") or {}).get("classes") or {}),
            improved=tuple(note.get("improved") or ()),
            regressed=tuple(note.get("regressed") or ()),
            asked={k: note[k] for k in ASKED if k in note},
            reason=str(note.get("reason") or ""),
            output_tail=_failure_output(note),
        )


ASKED = ("repair_of", "repair", "split_of")


def _failure_output(note: dict[str, Any]) -> str:
    from kernelopt.note import failure_output  # note.py imports the loop's records

    return failure_output(note)


@dataclass(frozen=True)
class ProposerState:
    """The run as a proposer may see it: best so far, everything tried, the counters."""

    best_metric: float | None
    best_knobs: dict[str, Any] | None
    better: str  # "higher" | "lower"
    history: tuple[Observation, ...] = ()
    tried: frozenset[str] = frozenset()  # knob signatures already attempted
    batch_size: int = 1
    seed: int = 0
    best_commit: str | None = None
    consecutive_regressions: int = 0
    recent_regressions: tuple[dict[str, Any], ...] = ()
    baseline_metric: float | None = None  # the baseline's figure over all its samples

    @classmethod
    def of(
        cls,
        state: RunState,
        history: tuple[Observation, ...],
        *,
        better: str,
        seed: int,
        tried: frozenset[str] | None = None,
    ) -> ProposerState:
        """The run's state as proposers see it; ``history`` its attempts as observations
        (``tried``: their knob signatures, when the caller keeps them already)."""
        best = state.best
        counters = state.counters
        return cls(
            best_metric=state.best_metric,
            best_knobs=best.note.get("knobs") if best else None,
            better=better,
            history=history,
            tried=frozenset(o.signature for o in history if o.signature)
            if tried is None
            else tried,
            seed=seed,
            best_commit=state.best_commit,
            consecutive_regressions=counters.consecutive_regressions,
            recent_regressions=tuple(counters.recent_regressions),
            baseline_metric=state.baseline_metric,
        )

    @property
    def best(self) -> Observation | None:
        """The attempt BEST holds (the last kept one, or the baseline)."""
        for seen in reversed(self.history):
            if seen.verdict in (Verdict.KEEP, Verdict.BASELINE):
                return seen
        return None

    @property
    def baseline(self) -> Observation | None:
        return next((seen for seen in self.history if seen.verdict == Verdict.BASELINE), None)


@runtime_checkable
class Proposer(Protocol):
    def propose(self, state: ProposerState) -> list[Candidate] | None:
        """The next candidates to try, or None when there is nothing left."""
        ...

    def observe(self, results: list[Observation]) -> None:
        """Decided results of earlier candidates; optional to use."""
        ...


class Observations:
    """Observations of recorded attempts, each built once: the loop asks for the
    whole history before every batch.

    A state that extends the one seen last (the runner appends one attempt per
    candidate) adds only its new attempts to the history and the tried set, so a
    proposer's view costs the same at attempt 1,000 as at attempt 10.
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[int, str], Observation] = {}
        self._records: tuple[AttemptRecord, ...] = ()
        self._history: tuple[Observation, ...] = ()
        self._tried: frozenset[str] = frozenset()

    def of(self, record: AttemptRecord) -> Observation:
        key = (record.attempt, record.commit)
        if key not in self._cache:
            self._cache[key] = Observation.of(record)
        return self._cache[key]

    def state(self, run: RunState, better: str, seed: int) -> ProposerState:
        """What a proposer sees of the run ``run``."""
        records, seen = run.attempts, len(self._records)
        extends = len(records) >= seen and (seen == 0 or records[seen - 1] is self._records[-1])
        if not extends:  # another history (loaded again from git): start over
            self._records, self._history, self._tried, seen = (), (), frozenset(), 0
        new = tuple(self.of(r) for r in records[seen:])
        if new:
            self._records = records
            self._history += new
            self._tried |= {o.signature for o in new if o.signature}
        return ProposerState.of(run, self._history, better=better, seed=seed, tried=self._tried)
