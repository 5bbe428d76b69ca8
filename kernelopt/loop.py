"""The loop: a baseline, then propose -> commit -> measure -> judge -> record, until a stop.

Each step is a module of its own: committing.py turns a change into the next
attempt's commit; evaluation.py measures it (sampling.py), judges it
(judge.py) and records the verdict in git (recorder.py); stopping.py says
when to stop; recovery.py finishes what a killed runner left half done.
State lives only in git, so running the same command again resumes a run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from kernelopt.batch import try_batch
from kernelopt.committing import Committer
from kernelopt.decide import Verdict
from kernelopt.evaluation import Evaluated, Evaluator
from kernelopt.executor import Executor, InProcess
from kernelopt.history import LEDGER, HistoryError, RunRepo, RunState
from kernelopt.measurement import Measurement
from kernelopt.program import Program
from kernelopt.proposers.base import Candidate, Observation, Observations, Proposer, ProposerState
from kernelopt.recorder import Recorder
from kernelopt.records import (
    AttemptResult,
    NothingToTry,
    Pending,
    RunStopped,
    RunSummary,
    resume_notice,
)
from kernelopt.recovery import measure_pending, recover
from kernelopt.rules import FixedRules
from kernelopt.runlock import RunBusy, run_lock
from kernelopt.sampling import Reporter, SilentReporter
from kernelopt.stopping import candidates_left, run_stop_reason, stop_reason
from kernelopt.targets.base import Target
from kernelopt.worktrees import drop_changes, measure_tree


class Runner:
    """Drives one run of one program in its own branch and worktree."""

    def __init__(
        self,
        program: Program,
        repo_root: Path,
        target: Target,
        *,
        tag: str,
        worktree: Path | None = None,
        reporter: Reporter | None = None,
        remeasure: bool = False,
        executor: Executor | None = None,
    ):
        self.program = program
        self.target = target
        self.run_id = f"{program.name}-{tag}"
        self.repo = RunRepo(repo_root, self.run_id, worktree)
        self.reporter: Reporter = reporter or SilentReporter()
        self.executor: Executor = executor or InProcess(target.device)
        self.state: RunState | None = None
        self.recorder = Recorder(self.repo, program, target)
        rules = FixedRules(program, self.recorder.program_path(), self.repo)
        self.committer = Committer(self.repo, program.target.format, program.timeout_s, rules)
        self.evaluator = Evaluator(
            program,
            target,
            self.repo,
            self.recorder,
            self.executor,
            self.reporter,
            remeasure=remeasure,
        )
        self.observations = Observations()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold this run against other kernelopt processes (RunBusy if one has it)."""
        with run_lock(self.repo.common_dir, self.run_id) as held:
            for pgid in held.reaped:
                self.reporter.event("reaped", pgid=pgid)
            yield

    def open(self, *, agent_mode: bool = False) -> RunState:
        """Attach the worktree and finish whatever a killed runner left half done."""
        for path in self.repo.clear_stale_locks():
            self.reporter.event("stale_lock", path=str(path))
        self.state = recover(self.repo, self.recorder, agent_mode=agent_mode)
        return self.state

    # -- attempts ---------------------------------------------------------------

    def ensure_baseline(self) -> AttemptResult | None:
        """Measure the unmodified code unless a baseline is recorded already.

        A baseline that failed stays in the history; the next start measures a
        new baseline from the user's current HEAD, where the fix most likely is.
        """
        assert self.state is not None
        if self.state.started:
            return None
        return self._evaluate(self.committer.baseline(self.state))

    def try_worktree(
        self, hypothesis: str, kind: str = "edit", extra: dict[str, Any] | None = None
    ) -> AttemptResult:
        """The agent's verb: the worktree's uncommitted change as one candidate
        (RunStopped before anything is committed once the run's stop is due)."""
        self._require_state()
        if reason := self.stop_if_due():
            raise RunStopped(f"run {self.run_id} stopped: {reason}")
        pending = self._require_state().pending
        if not pending and not self.repo.is_dirty():
            raise NothingToTry(
                "nothing to try: the worktree equals BEST; edit it, then run kernelopt try"
            )
        if pending and (settled := measure_pending(self.repo, pending, self.measure_pending)):
            return settled  # what a killed runner left: measured as committed, as `run` does
        state = self._require_state()
        best = str(state.best_commit)
        committed = self.committer.worktree(state.next_attempt, kind, hypothesis, best, extra)
        if isinstance(committed, Measurement):
            return self.record_failure(kind, hypothesis, committed, extra)
        return self._refused(committed) or self._evaluate(committed)

    def try_candidate(self, candidate: Candidate) -> AttemptResult:
        """Write a proposer's candidate into the worktree, commit it, measure it."""
        committed = self._commit(candidate)
        return committed if isinstance(committed, AttemptResult) else self._evaluate(committed)

    def record_failure(
        self, kind: str, hypothesis: str, failure: Measurement, extra: dict[str, Any] | None = None
    ) -> AttemptResult:
        """Record the worktree as a failed attempt without measuring it (kept reachable)."""
        state = self._require_state()
        best = str(state.best_commit)
        att = self.committer.as_is(state.next_attempt, kind, hypothesis, best, extra)
        return self._unmeasured(att, failure)

    def try_batch(self, candidates: list[Candidate]) -> list[AttemptResult]:
        """Commit several candidates, measure them at once, decide in order (batch.py)."""
        return try_batch(self, candidates)

    def measure_pending(self) -> list[AttemptResult]:
        """Measure attempts that were committed but never decided (killed mid-measure)."""
        results = []
        for n, sha in self._require_state().pending:
            self.repo.reset_to(sha)
            att = self.committer.read(n, sha)
            results.append(self._refused(att) or self._evaluate(att))
        return results

    def record_stop(self, reason: str) -> None:
        """Append the Stop Summary to performance.md and mark the run stopped."""
        self.state = self.recorder.stop(reason)

    # -- the loop ---------------------------------------------------------------

    def run(self, proposer: Proposer | None, max_candidates: int | None = None) -> RunSummary:
        """Baseline, then candidates until a stop condition; resumable at any point."""
        state = self.open()
        if state.stop or (state.started and self.stop_if_due()):
            return self.summary(f"already stopped: {self.stop_if_due()}", stopped=True)
        if state.started:
            self.reporter.event("resuming", **resume_notice(state))
        baseline = self.ensure_baseline()
        if baseline is not None and baseline.verdict != Verdict.BASELINE:
            return self.summary(
                f"the baseline could not be measured: {baseline.error}", failed=True
            )
        invoked = 0
        results = self.measure_pending()
        while True:
            for result in results:
                invoked += 1
                if proposer is not None:
                    proposer.observe([self._observed(result.attempt)])
                if result.stop:
                    return self.summary(result.stop_reason or "stopped", stopped=True)
            if proposer is None:
                return self.summary(
                    "no proposer: this program has no knob space (use `kernelopt try` or --agent)"
                )
            if reason := self.stop_if_due() or stop_reason(
                self.program, self._require_state(), invoked, max_candidates
            ):
                return self.summary(reason, stopped=bool(self.state and self.state.stop))
            state = replace(self.proposer_state(), batch_size=self.executor.slots)
            batch = proposer.propose(state)
            if not batch:
                return self.summary("the proposer has nothing left to try")
            fresh = [c for c in batch if not (c.signature and c.signature in state.tried)]
            left = candidates_left(self.program, self._require_state(), invoked, max_candidates)
            fresh = fresh[:left] if left is not None else fresh
            if len(fresh) > 1:
                results = self.try_batch(fresh)
            else:
                results = [self.try_candidate(c) for c in fresh]

    def stop_if_due(self) -> str | None:
        """Record the stop the run's target or budgets call for (one rule for every verb)."""
        assert self.state is not None
        if self.state.stop is not None:
            return str(self.state.stop.get("reason") or "stopped")
        reason = run_stop_reason(self.program, self.state)
        if reason is not None:
            drop_changes(self.repo, [LEDGER])  # the Stop Summary goes on kernelopt's ledger only
            self.record_stop(reason)
        return reason

    def proposer_state(self) -> ProposerState:
        return self.observations.state(
            self._require_state(), self.program.better, self.program.seed
        )

    def summary(self, reason: str, *, stopped: bool = False, failed: bool = False) -> RunSummary:
        self.state = self.repo.load_state()
        return RunSummary.of(
            self.state,
            branch=self.repo.branch,
            worktree=str(self.repo.worktree),
            metric=self.program.metric,
            better=self.program.better,
            reason=reason,
            stopped=stopped,
            failed=failed,
        )

    # -- internals ----------------------------------------------------------------

    def _commit(
        self, candidate: Candidate, export_to: Path | None = None
    ) -> Pending | AttemptResult:
        """The candidate as the next attempt's commit, or its failure recorded as an attempt.

        With ``export_to`` (a batch) the commit's tree is exported there and the
        worktree goes back to BEST for the next candidate.
        """
        state = self._require_state()
        failure = candidate.failure
        if failure is None:
            best = str(state.best_commit)
            committed = self.committer.candidate(state.next_attempt, candidate, best)
            if isinstance(committed, Pending):
                if (refused := self._refused(committed)) is not None:
                    return refused
                if export_to is not None:
                    self.repo.reset_to(best)
                    self.repo.export_tree(committed.sha, export_to / str(committed.n))
                    pending = (*state.pending, (committed.n, committed.sha))
                    self.state = replace(state, pending=pending)
                return committed
            failure = committed
        return self.record_failure(candidate.kind, candidate.hypothesis, failure, candidate.extra)

    def _refused(self, att: Pending) -> AttemptResult | None:
        """Record ``att`` unmeasured as refused when it changes a fixed path; else None."""
        failure = self.committer.refusal(att, self._require_state())
        return None if failure is None else self._unmeasured(att, failure)

    def _evaluate(self, att: Pending, tree: Path | None = None) -> AttemptResult:
        """Measure the commit (never the worktree: worktrees.py), then decide it."""
        assert self.state is not None
        self.repo.measuring = None if att.kind == Verdict.BASELINE else att.n
        tree = tree or measure_tree(self.repo, att.sha)
        return self._settled(self.evaluator.evaluate(self.state, att, tree))

    def _unmeasured(self, att: Pending, failure: Measurement, reset: bool = True) -> AttemptResult:
        assert self.state is not None
        return self._settled(self.evaluator.decide(self.state, att, [(failure, None)], reset=reset))

    def _settled(self, evaluated: Evaluated) -> AttemptResult:
        result, self.state = evaluated
        return result

    def _observed(self, attempt: int) -> Observation:
        assert self.state is not None
        return self.observations.of(next(r for r in self.state.attempts if r.attempt == attempt))

    def _require_state(self) -> RunState:
        if self.state is None:
            self.open()
        assert self.state is not None
        if not self.state.started:
            raise HistoryError(
                f"run {self.run_id} has no baseline yet: start it with kernelopt run"
            )
        if self.state.stop:
            raise RunStopped(f"run {self.run_id} stopped: {self.state.stop.get('reason')}")
        return self.state


__all__ = ["AttemptResult", "NothingToTry", "RunBusy", "RunStopped", "RunSummary", "Runner"]
