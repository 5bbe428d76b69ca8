"""Screening: each round, a pool of knob candidates estimated on sim; only the best measured.

A wrapper around any proposer: it asks the inner proposer for ``pool``
candidates, renders, CPU-checks and estimates each knob candidate on the
simulator (`kernelopt.sim.estimate`), and hands the loop the ``top`` best
estimates, each carrying a ``screen`` section (its estimate, rank and round)
that lands in the attempt's note beside the device figure. The loop does not
know screening happened.

Candidates screened out are not commits, but they are kept: every member of
every pool is a line of the run's screen record (`ScreenLog`), chosen or not,
with its knobs, estimate, and status (``incorrect`` when the CPU check failed:
recorded, never measured, never dropped). The inner proposer sees them as
observations with verdict ``screened`` (or their failure), so it does not draw
them again, and a resumed run reads them back from the record.

With an `EstimatePool` as estimator, once a round is handed out the next pool
is guessed (drawn from a copy of the inner proposer, as if nothing in the round
wins) and estimated in the background while the device measures; the real
next pool is drawn as always, and only its estimates not already made are
computed. With a `LiveCalibration` (`live_calibration.py`), the measured
candidates refit the model as the run goes, and later pools use the refit.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelopt.proposers.base import KNOB, Candidate, Observation, Proposer, ProposerState
from kernelopt.proposers.live_calibration import LiveCalibration
from kernelopt.sim.estimate import EstimateJob, EstimatePool, estimate_all

SCREENED = "screened"
MAX_EMPTY_POOLS = 5  # pools in a row with no correct kernel before the round gives up


class ScreenLog:
    """A run's screen record: one JSON line per pooled candidate, appended, never rewritten.

    It lives beside the run's other local records under the git directory
    (``kernelopt/screen/<run>.jsonl``): screened-out candidates have no commit
    a note could hang on, and a line appended before the round's candidates are
    committed survives a killed runner.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of_run(cls, common_dir: Path, run_id: str) -> ScreenLog:
        return cls(Path(common_dir) / "kernelopt" / "screen" / f"{run_id}.jsonl")

    def append(self, entries: Sequence[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as out:
            for entry in entries:
                out.write(json.dumps(entry, sort_keys=True, default=str) + "\n")

    def read(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        lines = self.path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def screened_out(self) -> list[dict[str, Any]]:
        """The pooled candidates that were not measured (failed checks included)."""
        return [e for e in self.read() if not e.get("chosen")]


def observation_of(entry: dict[str, Any]) -> Observation:
    """A screened-out candidate as a proposer sees it: no device metric, its sim profile."""
    status = entry.get("status")
    return Observation(
        attempt=-1,
        kind=KNOB,
        verdict=SCREENED if status == "ok" else str(status),
        metric=None,
        knobs=entry.get("knobs"),
        signature=entry.get("signature"),
        profile=dict(entry.get("profile") or {}),
        hypothesis=str(entry.get("hypothesis") or ""),
        error=str(entry.get("error") or ""),
    )


@dataclass(frozen=True)
class Screen:
    """How a round is screened: pool and top sizes, which way is better, where it is recorded."""

    pool: int
    top: int
    better: str
    log: ScreenLog
    job: Callable[[Candidate], EstimateJob | None]  # None: not a candidate sim can estimate
    calibration: str | None = None


class ScreeningProposer:
    """A proposer whose candidates are screened on sim before they reach the loop."""

    def __init__(
        self,
        inner: Proposer,
        screen: Screen,
        estimator: Callable = estimate_all,
        live: LiveCalibration | None = None,
    ):
        self.inner = inner
        self.screen = screen
        self.estimator = estimator
        self.live = live
        self.seen: list[Observation] = []
        self.round = 0
        self.restored = False

    def observe(self, results: list[Observation]) -> None:
        self.inner.observe(results)
        if self.live is not None:
            self.live.observe(results)

    def propose(self, state: ProposerState) -> list[Candidate] | None:
        self._restore()
        if self.live is not None:
            self.live.before_round()
        for _ in range(MAX_EMPTY_POOLS):
            batch = self.inner.propose(self._inner_state(state))
            if not batch:
                return batch
            chosen = self._screened(batch)
            if chosen:
                self._ahead(state, chosen)
                return chosen
        return []

    def close(self, wait: bool = False) -> None:
        """Stop background work: a running refit (finished first when ``wait``), the workers."""
        try:
            if self.live is not None:
                self.live.close(wait)
        finally:
            if isinstance(self.estimator, EstimatePool):
                self.estimator.close(wait)

    def _ahead(self, state: ProposerState, chosen: list[Candidate]) -> None:
        """Start estimating the next pool as a copy of the inner proposer would draw it
        if nothing handed out now wins; the inner proposer itself is not touched."""
        if not isinstance(self.estimator, EstimatePool) or (self.live and self.live.busy):
            return  # no background workers, or the next pool's parameters are not known yet
        try:
            shadow = copy.deepcopy(self.inner)
        except (TypeError, copy.Error):  # a proposer that cannot be copied: no guess
            return
        handed = frozenset(c.signature for c in chosen if c.signature)
        guess = shadow.propose(self._inner_state(state, handed))
        jobs = [self.screen.job(c) for c in guess or []]
        self.estimator.start([job for job in jobs if job is not None])

    def _inner_state(
        self, state: ProposerState, handed: frozenset[str] = frozenset()
    ) -> ProposerState:
        """What the inner proposer sees: a pool's size, the screened-out ones as tried."""
        return replace(
            state,
            batch_size=self.screen.pool,
            history=state.history + tuple(self.seen),
            tried=state.tried | {o.signature for o in self.seen if o.signature} | handed,
        )

    def _restore(self) -> None:
        """A resumed run: what earlier pools screened out, and the round they reached."""
        if self.restored:
            return
        self.restored = True
        entries = self.screen.log.read()
        self.round = max((int(e.get("round", 0)) for e in entries), default=0)
        self.seen = [observation_of(e) for e in entries if not e.get("chosen")]
        if self.seen:
            self.inner.observe(self.seen)
        if self.live is not None:
            self.live.restore()

    def _screened(self, batch: list[Candidate]) -> list[Candidate]:
        """The batch's unscreenable candidates, then the ``top`` best estimates."""
        self.round += 1
        jobs = [(c, self.screen.job(c)) for c in batch]
        passed = [c for c, job in jobs if job is None]
        pooled = [(c, job) for c, job in jobs if job is not None]
        results = self.estimator([job for _, job in pooled]) if pooled else []
        sign = -1.0 if self.screen.better == "higher" else 1.0
        order = sorted(
            (i for i, r in enumerate(results) if r["status"] == "ok"),
            key=lambda i: sign * results[i]["estimate"],
        )
        rank = {i: n + 1 for n, i in enumerate(order)}
        top = set(order[: self.screen.top])
        entries, chosen = [], []
        for i, ((candidate, _), result) in enumerate(zip(pooled, results, strict=True)):
            entry = {
                "round": self.round,
                "signature": candidate.signature,
                "knobs": candidate.knobs,
                "hypothesis": candidate.hypothesis,
                "status": result["status"],
                "estimate": result["estimate"],
                "error": result["error"],
                "profile": result["profile"],
                "rank": rank.get(i),
                "pool": len(pooled),
                "chosen": i in top,
                "calibration": self.screen.calibration,
            }
            if self.live is not None:  # the attempt of the refit whose parameters were used
                entry["refit"] = self.live.refit_at
            entries.append(entry)
            if i in top:
                if self.live is not None and isinstance(pooled[i][1], EstimateJob):
                    self.live.remember(candidate.signature, pooled[i][1].kernel_text)
                keys = ("estimate", "rank", "pool", "round", "calibration", "refit")
                section = {k: entry[k] for k in keys if k in entry}
                chosen.append(
                    (rank[i], replace(candidate, extra={**candidate.extra, "screen": section}))
                )
        self.screen.log.append(entries)
        learned = [observation_of(e) for e in entries if not e["chosen"]]
        self.seen += learned
        if learned:
            self.inner.observe(learned)
        return passed + [c for _, c in sorted(chosen, key=lambda rc: rc[0])]


def screening_for(
    inner: Proposer,
    program: Any,
    root: Path,
    workload_text: str,
    log: ScreenLog,
    run: tuple[Path, str] | None = None,
) -> ScreeningProposer:
    """The screening wrapper a program's ``search.screen`` asks for (calibration read once).

    With ``run`` (the git common directory and the run's id) and an MFU metric,
    the run's measurements refit the model as it goes (`live_calibration.py`).
    """
    from kernelopt.proposers.live_calibration import live_for
    from kernelopt.sim.calibration import read_overrides

    cfg = program.screen
    assert cfg is not None
    overrides: dict[str, float] = {}
    if cfg.calibration:
        path = Path(cfg.calibration)
        overrides = read_overrides(path if path.is_absolute() else Path(root) / path)
    target, decide = program.target, program.decide
    live = live_for(program, root, *run, workload_text, overrides) if run else None

    def job(candidate: Candidate) -> EstimateJob | None:
        kernel = candidate.files.get(target.kernel)
        if candidate.kind != KNOB or candidate.failure is not None or kernel is None:
            return None
        return EstimateJob(
            workload_text=workload_text,
            kernel_text=kernel,
            metric=program.metric,
            func=target.func,
            seeds=tuple(range(decide.correctness_seeds)),
            atol=decide.atol,
            rtol=decide.rtol,
            rel_l2=decide.rel_l2,
            compiler_args=tuple(program.device.neuron.compiler_args),
            params=live.params if live is not None else overrides,
        )

    screen = Screen(cfg.pool, cfg.top, program.better, log, job, cfg.calibration)
    return ScreeningProposer(inner, screen, EstimatePool(), live)


def screened_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """`kernelopt log --screened`: one line per screened-out candidate."""
    if not rows:
        return ["nothing screened out (the run has no search.screen, or no round yet)"]
    lines = []
    for row in rows:
        estimate = row.get("estimate")
        figure = f"{estimate:8.2f}" if isinstance(estimate, int | float) else f"{'-':>8}"
        knobs = json.dumps(row.get("knobs"), sort_keys=True, separators=(",", ":"))
        what = (
            "screened" if row.get("status") == "ok" else f"{row.get('status')}: {row.get('error')}"
        )
        lines.append(f"round {row.get('round'):>3}  {figure}  {what}  {knobs}")
    return lines
