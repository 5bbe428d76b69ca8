"""Estimating the next pool while the device measures: a guess drawn from a copy of the
inner proposer, estimated in the background by the run's worker processes; what
the guess got right is not estimated again, and nothing else changes."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from kernelopt.proposers.base import KNOB, Candidate, Observation, ProposerState
from kernelopt.proposers.nki import NkiKnobProposer
from kernelopt.proposers.screen import Screen, ScreeningProposer, ScreenLog
from kernelopt.sim.estimate import EstimateJob, EstimatePool, estimate_all

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"
WORKLOAD = (KERNELS / "workload.py").read_text()
STATE = ProposerState(best_metric=None, best_knobs=None, better="higher")


def _candidate(name: str, kernel: str) -> Candidate:
    # A comment makes each kernel text its own, so no two candidates share an estimate.
    text = (KERNELS / kernel).read_text() + f"\n# {name}\n"
    return Candidate(KNOB, name, files={"k.py": text}, knobs={"name": name}, signature=name)


class Scripted:
    """An inner proposer with fixed batches; counts the calls it answers itself."""

    def __init__(self, batches: list[list[Candidate]]) -> None:
        self.batches = batches
        self.calls = 0
        self.seen: list[Observation] = []

    def propose(self, state: ProposerState) -> list[Candidate] | None:
        self.calls += 1
        return self.batches.pop(0) if self.batches else None

    def observe(self, results: list[Observation]) -> None:
        self.seen += results


def _screen(tmp_path: Path, pool: int, top: int) -> Screen:
    def job(c: Candidate) -> EstimateJob:
        return EstimateJob(workload_text=WORKLOAD, kernel_text=c.files["k.py"], metric="mfu")

    return Screen(pool, top, "higher", ScreenLog(tmp_path / "s.jsonl"), job)


def test_the_guessed_pool_is_not_estimated_again_and_its_failures_are_recorded(
    tmp_path: Path,
) -> None:
    inner = Scripted(
        [
            [_candidate("a", "kernel.py"), _candidate("b", "kernel_wrong_rows.py")],
            [
                _candidate("wrong", "kernel_wrong_rows.py"),
                _candidate("right", "kernel.py"),
                _candidate("oom", "kernel_psum_oom.py"),
            ],
        ]
    )
    pool = EstimatePool(workers=2)
    proposer = ScreeningProposer(inner, _screen(tmp_path, pool=3, top=1), pool)
    try:
        first = proposer.propose(STATE)
        assert [c.signature for c in first or []] == ["a"]
        assert inner.calls == 1  # the guess came from a copy
        assert pool.computed == 2 + 3  # this round's pool, and the next one started
        second = proposer.propose(STATE)
        assert [c.signature for c in second or []] == ["right"]
        assert pool.computed == 5 and pool.hits == 3
    finally:
        proposer.close()
    assert multiprocessing.active_children() == []
    entries = {e["signature"]: e for e in ScreenLog(tmp_path / "s.jsonl").read()}
    assert entries["wrong"]["status"] == "incorrect" and not entries["wrong"]["chosen"]
    assert entries["oom"]["status"] == "failed" and entries["oom"]["error"]
    verdicts = {o.signature: o.verdict for o in inner.seen}
    assert verdicts == {"b": "incorrect", "wrong": "incorrect", "oom": "failed"}


def _search(tmp_path: Path, estimator: Any, rounds: int) -> list[list[tuple[str, float]]]:
    """Rounds of a screened NKI knob search, each chosen candidate 'measured' as its
    estimate minus a penalty by rank, so some rounds keep and some do not."""
    inner = NkiKnobProposer(
        KERNELS / "workload.py", knobs_path="k.json", kernel_path="k.py", seed=5, start_pool=0
    )
    proposer = ScreeningProposer(inner, _screen(tmp_path, pool=4, top=2), estimator)
    best: float | None = None
    best_knobs: dict[str, Any] | None = None
    history: list[Observation] = []
    picked = []
    try:
        for attempt in range(rounds):
            state = ProposerState(best, best_knobs, "higher", tuple(history))
            batch = proposer.propose(state) or []
            picked.append([(c.signature or "", c.extra["screen"]["estimate"]) for c in batch])
            for n, c in enumerate(batch):
                metric = c.extra["screen"]["estimate"] - 0.5 * (n + attempt % 2)
                kept = best is None or metric > best
                if kept:
                    best, best_knobs = metric, c.knobs
                verdict = "keep" if kept else "tie"
                obs = Observation(len(history) + 1, KNOB, verdict, metric, c.knobs, c.signature)
                history.append(obs)
                proposer.observe([obs])
    finally:
        proposer.close()
    return picked


def test_guessing_ahead_changes_no_candidate_and_saves_estimates(tmp_path: Path) -> None:
    pool = EstimatePool(workers=2)
    ahead = _search(tmp_path / "ahead", pool, rounds=5)
    plain = _search(tmp_path / "plain", estimate_all, rounds=5)
    assert ahead == plain
    assert pool.hits > 0
    assert multiprocessing.active_children() == []


def _slow(job: EstimateJob) -> dict[str, Any]:
    import time

    time.sleep(60)
    return {"status": "ok", "estimate": 1.0, "error": "", "profile": {}}


def test_an_interrupted_pool_stops_its_workers_at_once_a_finished_one_waits() -> None:
    import time

    pool = EstimatePool(workers=2, run=_slow)
    pool.start([EstimateJob(workload_text="w", kernel_text=k, metric="mfu") for k in "ab"])
    deadline = time.monotonic() + 10
    while pool._executor is not None and not pool._executor._processes:
        assert time.monotonic() < deadline, "the workers never started"
        time.sleep(0.05)
    workers = list(pool._executor._processes.values()) if pool._executor else []
    started = time.monotonic()
    pool.close(wait=False)  # Ctrl-C: the estimates under way are worth nothing now
    assert time.monotonic() - started < 10
    assert workers and not any(p.is_alive() for p in workers)
