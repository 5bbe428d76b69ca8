"""Recording a judged attempt in git: its note, the keep commit or the revert, a stop.

The order is what makes a kill at any instant recoverable (recovery.py): the
note is written before the keep commit, the keep commit before the best ref
moves; a discarded attempt stays reachable through its attempt ref while the
branch goes back to BEST.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelopt import ledger
from kernelopt.decide import Outcome, Verdict, update_counters
from kernelopt.history import LEDGER, AttemptRecord, RunRepo, RunState
from kernelopt.judge import Judgement
from kernelopt.measurement import SKIPPED, Measurement
from kernelopt.note import NoteContext, build_note, now, regression_summary
from kernelopt.program import Program
from kernelopt.records import AttemptResult, Pair, Pending, measured_on
from kernelopt.state_step import advance
from kernelopt.targets.base import Target


class Recorder:
    """Writes one run's decisions into its branch, refs, notes and performance.md."""

    def __init__(self, repo: RunRepo, program: Program, target: Target):
        self.repo = repo
        self.program = program
        self.target = target

    def record(
        self,
        state: RunState,
        att: Pending,
        samples: Sequence[Pair],
        judgement: Judgement,
        *,
        reused_from: int | None = None,
        measure_s: float | None = None,
        reset: bool = True,
        reference: Measurement | None = None,
    ) -> tuple[AttemptResult, RunState]:
        """Note, then keep or revert; the decided attempt and the run's state after it.
        ``reference``: the compiler baseline measured with a baseline attempt (else the
        target measures it here)."""
        verdict = judgement.verdict
        assert verdict is not None
        cfg = self.program.decide
        files = tuple(self.repo.files_of(att.sha, state.best_commit)) if state.best_commit else ()
        ctx = self._context(state)
        time = now()
        outcome = update_counters(
            state.counters,
            verdict,
            max_consecutive=cfg.max_consecutive_regressions,
            window=cfg.recent_window,
            summary=regression_summary(att, judgement, ctx, files, time),
        )
        note = build_note(
            att,
            judgement,
            samples,
            outcome,
            ctx,
            content_key=self.repo.content_key(att.sha, self.target.device),
            files=files,
            reused_from=reused_from,
            reference=self._reference(reference) if verdict == Verdict.BASELINE else None,
            measure_s=measure_s,
            time=time,
        )
        self.repo.write_note(att.sha, note)
        if verdict in (Verdict.KEEP, Verdict.BASELINE):
            note = self.keep(att.n, att.sha, note)
        elif reset:
            self.repo.reset_to(state.best_commit or f"{att.sha}^")
        # Advance the state in memory: rebuilding it from every note per
        # candidate would make each attempt cost more as the history grows.
        after = advance(
            state,
            AttemptRecord(att.n, att.sha, note),
            self.repo.read_ref("best")
            if verdict in (Verdict.KEEP, Verdict.BASELINE)
            else state.best_commit,
            tuple(p for p in state.pending if p[0] != att.n),
        )
        if outcome.stop:
            after = self.stop(outcome.stop_reason or "stopped")
        return _result(att, judgement, outcome, note, len(samples)), after

    def _context(self, state: RunState) -> NoteContext:
        return NoteContext(
            run_id=self.repo.run_id,
            program=self.program_path(),
            metric_name=self.program.metric,
            metric_key=self.program.metric_key,
            device=self.target.device,
            deterministic=self.target.deterministic,
            best_commit=state.best_commit,
            previous_best=state.best_metric,
            best_samples=state.best_figure.samples,
            better=self.program.better,
        )

    def keep(self, n: int, sha: str, note: dict[str, Any]) -> dict[str, Any]:
        """Append the ledger row for a kept attempt and move BEST there; the note, which
        then names the new BEST (``compared_with`` keeps the BEST it was judged against)."""
        # What measuring left in the worktree (a benchmark's result files) must
        # not ride along into the ledger commit or the next candidate's commit.
        self.repo.reset_to(sha)
        labels = self.labels()
        ledger.append(self.repo.worktree / LEDGER, ledger.kept_rows(note, sha, labels))
        subject, body = ledger.kept_message(n, sha, note, labels)
        head = self.repo.commit_ledger(
            subject, body, {"Kernelopt-Run": self.repo.run_id, "Kernelopt-Kept": str(n)}
        )
        self.repo.set_ref("best", head)
        # One BEST id: the newest note names the best ref, like status and git log.
        kept = {**note, "compared_with": note.get("compared_with", note.get("best_commit"))}
        kept["best_commit"] = head
        self.repo.write_note(sha, kept)
        return kept

    def stop(self, reason: str) -> RunState:
        """Append the Stop Summary to performance.md and mark the run stopped."""
        state = self.repo.load_state()
        best = state.best
        best_metrics: dict[str, Any] = {self.program.metric: state.best_metric}
        if state.baseline and best:
            best_metrics["baseline"] = state.baseline_metric
        text = ledger.render_stop_summary(
            self.repo.run_id,
            now(),
            reason,
            (state.best_commit or "") if best else "",
            best_metrics,
            list(state.counters.recent_regressions),
        )
        ledger.append(self.repo.worktree / LEDGER, text)
        head = self.repo.commit_ledger(
            f"kernelopt: stop {self.repo.run_id}: {reason}",
            "",
            {"Kernelopt-Run": self.repo.run_id, "Kernelopt-Stop": reason},
        )
        self.repo.write_note(
            head,
            {"kernelopt": 1, "stop": True, "reason": reason, "time": now(), "best_commit": head},
        )
        self.repo.set_ref("stop", head)
        self.repo.set_ref("best", head)
        return self.repo.load_state()

    def _reference(self, measured: Measurement | None = None) -> dict[str, Any] | None:
        """The compiler's own result for the same math, measured once per run (with the
        baseline, on its device, when ``measured``; else here), where it cannot be
        measured, the row says why instead of a number."""
        m = measured or self.target.reference(self.repo.worktree)
        if m is None:
            return None
        value = m.value(self.program.metric_key) if m.ok else None
        return {
            "what": m.extra.get("what", "compiler baseline"),
            "metric": value,
            "why": m.extra.get("why", "") if m.ok else m.error,
            "skipped": m.status == SKIPPED,
            "measurement": m.to_json(),
        }

    def program_path(self) -> str:
        """The program's path as the run's notes name it: relative to the repository."""
        path = self.program.path.resolve()
        for base in (self.repo.root, self.repo.worktree):
            if base in path.parents:
                return str(path.relative_to(base))
        return str(path)

    def labels(self) -> ledger.Labels:
        t = self.program.target
        if t.kernel:
            kernel = Path(t.kernel).parent.name or Path(t.kernel).stem
        else:
            kernel = self.program.name
        return ledger.Labels(
            run_id=self.repo.run_id,
            program=self.program_path(),
            target=t.command or t.kernel or t.kind,
            kernel=kernel,
            metric=self.program.metric,
            better=self.program.better,
        )


def _result(
    att: Pending, judgement: Judgement, outcome: Outcome, note: dict[str, Any], samples: int
) -> AttemptResult:
    assert judgement.verdict is not None
    return AttemptResult(
        attempt=att.n,
        commit=att.sha,
        kind=att.kind,
        hypothesis=att.hypothesis,
        verdict=judgement.verdict,
        metric=judgement.metric,
        best_metric=note["best_metric"],
        previous_best=note["previous_best"],
        gain=judgement.gain,
        consecutive_regressions=outcome.counters.consecutive_regressions,
        recent_regressions=tuple(outcome.counters.recent_regressions),
        stop=outcome.stop,
        stop_reason=outcome.stop_reason,
        error=judgement.error,
        classes=judgement.classes,
        improved=judgement.improved,
        regressed=judgement.regressed,
        samples=samples,
        reused_from=note["reused_from"],
        files=tuple(note["files"]),
        basis=note.get("basis"),
        measured=measured_on(note["measurement"]),
        reason=note.get("reason", ""),
        output_tail=note.get("output_tail", ""),
    )
