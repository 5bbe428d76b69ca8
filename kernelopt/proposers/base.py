"""Where candidates come from: the two-verb `Proposer` interface.

The loop never knows which proposer it drives. It asks ``propose(state)`` for
the next batch (``None`` when the proposer has nothing left) and reports each
decided candidate back through ``observe``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

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
    """

    kind: str
    hypothesis: str
    files: dict[str, str] = field(default_factory=dict)
    knobs: dict[str, Any] | None = None
    signature: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown candidate kind {self.kind!r}")


@dataclass(frozen=True)
class Observation:
    """What the loop learned about one attempt, as proposers see it."""

    attempt: int
    kind: str
    verdict: str  # keep | tie | regression | incorrect | failed | diverged | baseline
    metric: float | None
    knobs: dict[str, Any] | None = None
    signature: str | None = None
    profile: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProposerState:
    """The run as a proposer may see it: best so far and everything tried."""

    best_metric: float | None
    best_knobs: dict[str, Any] | None
    better: str  # "higher" | "lower"
    history: tuple[Observation, ...] = ()
    tried: frozenset[str] = frozenset()  # knob signatures already attempted
    batch_size: int = 1
    seed: int = 0


@runtime_checkable
class Proposer(Protocol):
    def propose(self, state: ProposerState) -> list[Candidate] | None:
        """The next candidates to try, or None when there is nothing left."""
        ...

    def observe(self, results: list[Observation]) -> None:
        """Decided results of earlier candidates; optional to use."""
        ...
