"""A knob proposer driven by the runner's keep rule on a deterministic metric, in memory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelopt.proposers.base import Candidate, Observation, ProposerState


@dataclass(frozen=True)
class Step:
    candidate: Candidate
    value: float
    verdict: str  # keep, tie or regression
    best_knobs: dict[str, Any] | None  # BEST's knobs when the candidate was proposed


def drive(
    proposer: Any,
    metric: Callable[[dict], float],
    budget: int,
    *,
    tie: float | None = None,
    batch_size: int = 1,
    profile: Callable[[dict], dict] | None = None,
    until: float | None = None,
) -> list[Step]:
    """Up to ``budget`` candidates, each measured by ``metric`` and observed at once.

    A candidate above BEST is kept; with ``tie`` (a relative band) one within it
    of BEST is a tie, anything else a regression. With ``until``, the run ends once
    a candidate reaches that metric (a target). No signature may come twice.
    """
    tried: set[str] = set()
    history: list[Observation] = []
    best, best_knobs = None, None
    steps: list[Step] = []
    while len(steps) < budget:
        state = ProposerState(
            best_metric=best,
            best_knobs=best_knobs,
            better="higher",
            history=tuple(history),
            tried=frozenset(tried),
            batch_size=batch_size,
        )
        batch = proposer.propose(state)
        if not batch:
            break
        for c in batch:
            assert c.signature not in tried, "a signature was proposed twice"
            tried.add(c.signature)
            value = metric(c.knobs)
            if best is None or value > best:
                verdict = "keep"
            elif tie is not None and value >= best * (1 - tie):
                verdict = "tie"
            else:
                verdict = "regression"
            steps.append(Step(c, value, verdict, best_knobs))
            seen = profile(c.knobs) if profile else {}
            obs = Observation(len(steps), "knob", verdict, value, c.knobs, c.signature, seen)
            history.append(obs)
            proposer.observe([obs])
            if verdict == "keep":
                best, best_knobs = value, c.knobs
            if until is not None and value >= until:
                return steps
    return steps
