"""One committed attempt, evaluated: measured on a device, judged, recorded.

Measuring is sampling.py's (one sample, or candidate and BEST interleaved on
one device), the verdict judge.py's, the git side recorder.py's. What this
adds is the order between them and the cases around it: an attempt whose
tree was already measured reuses that result, a Ctrl-C is recorded as an
interrupted attempt, and with no idle device the attempt is recorded
unmeasured and the run stops. Each call takes the run's state and returns
the state after the attempt.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from kernelopt import interrupts
from kernelopt.decide import Verdict
from kernelopt.executor import Executor
from kernelopt.history import AttemptRecord, RunRepo, RunState
from kernelopt.judge import Best, Judgement, Rule, judge, paired
from kernelopt.measurement import FAILED, INTERRUPTED, Measurement
from kernelopt.program import Program
from kernelopt.recorder import Recorder
from kernelopt.records import AttemptResult, Pair, Pending
from kernelopt.sampling import Decided, NoDevice, Reporter, Sampled, Sampler
from kernelopt.targets.base import Target
from kernelopt.validity import checked

Evaluated = tuple[AttemptResult, RunState]


class Evaluator:
    """Measures, judges and records committed attempts of one run."""

    def __init__(
        self,
        program: Program,
        target: Target,
        repo: RunRepo,
        recorder: Recorder,
        executor: Executor,
        reporter: Reporter,
        *,
        remeasure: bool = False,
    ):
        self.program = program
        self.target = target
        self.repo = repo
        self.recorder = recorder
        self.executor = executor
        self.reporter = reporter
        self.remeasure = remeasure

    def evaluate(self, state: RunState, att: Pending, tree: Path | None = None) -> Evaluated:
        """Measure ``att`` (its exported ``tree``, else the worktree), then decide."""
        self.report_notices()
        reused = self._reusable(state, att)
        self.reporter.event("measuring", attempt=att.n, kind=att.kind, hypothesis=att.hypothesis)
        if reused is not None:
            samples = [(Measurement.from_json(reused.measurement), None)]
            return self.decide(state, att, samples, reused=reused)
        started = time.monotonic()
        sampler = self._sampler(state)
        try:
            sampled = sampler.sample(att, tree or self.repo.worktree, self._decided(state))
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP (interrupts.py)
            failure = Measurement.failure(INTERRUPTED, interrupts.reason(exc))
            self.decide(state, att, [(failure, None)])
            raise
        elapsed = time.monotonic() - started
        return self.settle(state, att, sampled, elapsed, reference=sampler.reference)

    def sample_many(
        self, state: RunState, attempts: Sequence[tuple[Pending, Path]]
    ) -> dict[int, Sampled]:
        """Sample a batch at once, one device each; decide them with ``settle``."""
        if not attempts:
            return {}
        return self._sampler(state).sample_many(attempts, self._decided(state))

    def settle(
        self,
        state: RunState,
        att: Pending,
        sampled: Sampled,
        measure_s: float | None = None,
        *,
        reference: Measurement | None = None,
    ) -> Evaluated:
        """Decide a sampled attempt; with no idle device, record it unmeasured and stop.
        ``reference`` is the compiler baseline measured with a baseline attempt."""
        if not isinstance(sampled, NoDevice):
            return self.decide(state, att, sampled, measure_s=measure_s, reference=reference)
        failure = Measurement.failure(FAILED, f"not measured: {sampled.reason}")
        result, _ = self.decide(state, att, [(failure, None)])
        why = f"no idle device: {sampled.reason}"
        return replace(result, stop=True, stop_reason=why), self.recorder.stop(why)

    def decide(
        self,
        state: RunState,
        att: Pending,
        samples: list[Pair],
        *,
        reused: AttemptRecord | None = None,
        measure_s: float | None = None,
        reset: bool = True,
        reference: Measurement | None = None,
    ) -> Evaluated:
        """Judge the samples and record the verdict."""
        self.report_notices()
        earlier = None
        if reused is not None:
            earlier = Judgement(
                Verdict(reused.verdict),
                gain=reused.note.get("gain"),
                reason=f"the same tree as #{reused.attempt}, judged against this BEST: "
                + (reused.note.get("reason") or f"its verdict was {reused.verdict}"),
            )
        best = None
        if state.best is not None and att.kind != Verdict.BASELINE:
            classes = (state.best.measurement.get("extra") or {}).get("classes") or {}
            best = Best(state.best_metric, classes)
        judgement = judge(
            samples,
            best,
            self._rule(state),
            deterministic_target=self.target.deterministic,
            reused=earlier,
        )
        result, after = self.recorder.record(
            state,
            att,
            samples,
            judgement,
            reused_from=reused.attempt if reused else None,
            measure_s=measure_s,
            reset=reset,
            reference=reference,
        )
        self.reporter.event("attempt", result=result)
        return result, after

    def report_notices(self) -> None:
        """Say what was repaired in the run's state (recovery.py) before the next record."""
        for message in filter(None, self.repo.notices):
            self.reporter.event("warning", message=message)
        self.repo.notices.clear()

    def _rule(self, state: RunState) -> Rule:
        d = self.program.decide
        return Rule(
            self.program.metric_key,
            self.program.better,
            d.noise,
            d.confirm,
            d.max_samples,
            prior=state.spread,
        )

    def _decided(self, state: RunState) -> Decided:
        rule = self._rule(state)
        return lambda samples: paired(samples, rule).verdict is not None

    def _sampler(self, state: RunState) -> Sampler:
        valid = self.program.metric_range
        return Sampler(
            self.target,
            self.executor,
            self.reporter,
            lambda: self._best_tree(state),
            check=lambda m: checked(m, self.program.metric_key, valid),
        )

    def _reusable(self, state: RunState, att: Pending) -> AttemptRecord | None:
        """An earlier attempt with the same tree on the same device kind, if its result holds."""
        if self.remeasure or att.kind == Verdict.BASELINE:
            return None
        earlier = state.by_content().get(self.repo.content_key(att.sha, self.target.device))
        if earlier is None:
            return None
        # A noisy result only holds against the BEST it was compared with.
        against = earlier.note.get("compared_with", earlier.note.get("best_commit"))
        if self.target.deterministic or against == state.best_commit:
            return earlier
        return None

    def _best_tree(self, state: RunState) -> Path:
        """BEST's tree, exported beside the worktree, for interleaved re-measurement."""
        assert state.best_commit is not None
        dest = self.repo.common_dir / "kernelopt" / "best" / self.repo.run_id
        marker = dest.parent / f"{self.repo.run_id}.commit"
        if not (dest.exists() and marker.exists() and marker.read_text() == state.best_commit):
            self.repo.export_tree(state.best_commit, dest)
            marker.write_text(state.best_commit)
        return dest
