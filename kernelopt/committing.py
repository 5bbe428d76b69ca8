"""Committing attempts: a candidate's files, or the worktree's own change, become the next commit.

Every attempt is committed before it is measured, so what is measured is
exactly a commit's tree. The program's formatter runs first, so the measured
commit is already formatted; a formatter that fails is the attempt's failure.
The proposer's knowledge of a candidate (knobs, signature) rides along as
commit trailers, which is what a resumed runner reads back.
"""

from __future__ import annotations

import json
from typing import Any

from kernelopt.decide import Verdict
from kernelopt.history import RunRepo, RunState, read_trailers
from kernelopt.hypothesis import knob_label, safe_hypothesis
from kernelopt.measurement import FAILED, REFUSED, Measurement
from kernelopt.proposers.base import Candidate
from kernelopt.records import Pending
from kernelopt.rules import FixedRules, refusal
from kernelopt.targets.command import run_local


def candidate_trailers(candidate: Candidate) -> dict[str, str]:
    """What a proposer knows about a candidate, kept in its commit for resuming."""
    trailers = {}
    if candidate.signature:
        trailers["Kernelopt-Signature"] = candidate.signature
    if candidate.knobs is not None:
        trailers["Kernelopt-Knobs"] = json.dumps(
            candidate.knobs, sort_keys=True, separators=(",", ":"), default=str
        )
    return trailers


class Committer:
    """Turns changes in one run's worktree into attempt commits on top of BEST."""

    def __init__(
        self,
        repo: RunRepo,
        format_command: str | None,
        timeout_s: float,
        rules: FixedRules | None = None,
    ):
        self.repo = repo
        self.format_command = format_command
        self.timeout_s = timeout_s
        self.rules = rules

    def refusal(self, att: Pending, state: RunState) -> Measurement | None:
        """Why a committed candidate may not be measured (it changes a fixed path), or None."""
        if att.kind == Verdict.BASELINE:
            return None
        paths = self.refused_paths(att.sha, state)
        return Measurement.failure(REFUSED, refusal(paths)) if paths else None

    def refused_paths(self, sha: str, state: RunState | None) -> list[str]:
        """The fixed paths commit ``sha`` changes against BEST."""
        return self.rules.broken_by(sha, state) if self.rules and state else []

    def format(self) -> Measurement | None:
        """Run the program's formatter on the worktree: the failure, or None when formatted."""
        command = self.format_command
        if not command:
            return None
        outcome = run_local(command, self.repo.worktree, {}, self.timeout_s)
        if outcome.timed_out or outcome.returncode != 0:
            status = (
                "timed out" if outcome.timed_out else f"exited with status {outcome.returncode}"
            )
            tail = "\n".join(outcome.output.splitlines()[-20:])
            return Measurement.failure(
                FAILED, f"the formatter {status}: {command}\n{tail}".strip(), log_tail=tail
            )
        return None

    def baseline(self, state: RunState) -> Pending:
        """The baseline attempt: the unmodified code, committed (or its pending commit).

        After failed baselines it starts from the user's current HEAD again,
        where the fix most likely is.
        """
        hypothesis = "measure the unmodified code"
        if state.pending:
            n, sha = state.pending[0]
            self.repo.reset_to(sha)
        else:
            n = state.next_attempt
            if state.attempts:
                self.repo.reset_to(self.repo.git("rev-parse", "HEAD").strip())
            committed = self.repo.commit_attempt(n, Verdict.BASELINE, hypothesis, allow_empty=True)
            assert committed is not None
            sha = committed
        return Pending(n, sha, Verdict.BASELINE, hypothesis)

    def candidate(self, n: int, candidate: Candidate, parent: str) -> Pending | Measurement:
        """Write a proposer's candidate, format and commit it; the formatter's failure if any."""
        if candidate.in_worktree:
            return self.worktree(n, candidate.kind, candidate.hypothesis, parent, candidate.extra)
        hypothesis = candidate.hypothesis
        if candidate.knobs is not None and len(candidate.files) == 1:  # label what is committed
            [(rel, text)] = candidate.files.items()
            before = self.repo.worktree / rel  # the worktree is at the parent (BEST) here
            was = before.read_text(errors="replace") if before.is_file() else None
            hypothesis = knob_label(hypothesis, was, text)
        self.repo.write_files(candidate.files)
        formatted = self.format()
        if formatted is not None:
            return formatted
        sha = self.repo.commit_attempt(
            n,
            candidate.kind,
            hypothesis,
            allow_empty=True,
            parent=parent,
            trailers=candidate_trailers(candidate),
        )
        assert sha is not None
        return Pending(
            n,
            sha,
            candidate.kind,
            safe_hypothesis(hypothesis),
            candidate.knobs,
            candidate.signature,
            dict(candidate.extra),
        )

    def worktree(
        self, n: int, kind: str, hypothesis: str, parent: str, extra: dict[str, Any] | None = None
    ) -> Pending | Measurement:
        """Commit the worktree's uncommitted change; a failure when there is none."""
        formatted = self.format()
        if formatted is not None:
            return formatted
        sha = self.repo.commit_attempt(n, kind, hypothesis, parent=parent)
        if sha is None:
            return Measurement.failure(FAILED, "no change: the worktree equals BEST_COMMIT")
        return Pending(n, sha, kind, safe_hypothesis(hypothesis), extra=dict(extra or {}))

    def as_is(
        self, n: int, kind: str, hypothesis: str, parent: str, extra: dict[str, Any] | None = None
    ) -> Pending:
        """Commit whatever the worktree holds, even nothing (an attempt recorded unmeasured)."""
        sha = self.repo.commit_attempt(n, kind, hypothesis, allow_empty=True, parent=parent)
        assert sha is not None
        return Pending(n, sha, kind, safe_hypothesis(hypothesis), extra=dict(extra or {}))

    def read(self, n: int, sha: str) -> Pending:
        """A committed, undecided attempt as its commit tells it, knobs included, so that
        a proposer sees it as tried after a resume and does not propose it again."""
        body = self.repo.git("log", "-1", "--format=%B", sha)
        trailers = read_trailers(body)
        subject = body.splitlines()[0] if body else ""
        hypothesis = subject.split(": ", 1)[1] if ": " in subject else subject
        knobs = json.loads(trailers["Kernelopt-Knobs"]) if "Kernelopt-Knobs" in trailers else None
        return Pending(
            n,
            sha,
            trailers.get("Kernelopt-Kind", "edit"),
            hypothesis,
            knobs,
            trailers.get("Kernelopt-Signature"),
        )
