"""A coding agent as a proposer: each ``propose`` is one round of the agent command.

The command runs in the run's worktree with the round's context
(``KERNELOPT_CONTEXT``, ``KERNELOPT_CONTEXT_JSON``), edits files there and
writes its one-sentence hypothesis to ``KERNELOPT_HYPOTHESIS_FILE``. The
candidate it yields is that worktree change; the loop commits, measures and
decides it like any other. What the agent is asked (improve, repair an
incorrect attempt, split a diverged one) is derived from the observations
each round, so repairs and splits survive a restart. A round that crashes or
times out is a candidate carrying its failure.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from kernelopt.agent import (
    REPAIR,
    SPLIT,
    Ask,
    ask_fields,
    build_context,
    next_ask,
    render_context,
)
from kernelopt.history import RunRepo
from kernelopt.measurement import FAILED, Measurement
from kernelopt.program import Program
from kernelopt.proposers.base import AGENT, Candidate, Observation, ProposerState
from kernelopt.targets.command import run_local


class AgentProposer:
    """Runs ``command`` once per proposal in ``repo``'s worktree."""

    def __init__(
        self,
        command: str,
        program: Program,
        repo: RunRepo,
        *,
        timeout_s: float = 1800.0,
        reporter: Any = None,
    ):
        self.command = command
        self.program = program
        self.repo = repo
        self.timeout_s = timeout_s
        self.reporter = reporter

    def propose(self, state: ProposerState) -> list[Candidate] | None:
        ask = next_ask(state.history, self.program.decide.repair_attempts)
        if ask.mode in (REPAIR, SPLIT) and ask.attempt is not None and state.best_commit:
            # Start from the candidate being repaired (the latest repair) or split, on BEST.
            source = ask.attempt if ask.mode == SPLIT else state.history[-1].attempt
            self.repo.reset_to(state.best_commit)
            self.repo.wt("checkout", _commit_of(state, source), "--", ".")
        if self.reporter is not None:
            self.reporter.event("agent", mode=ask.mode, attempt=ask.attempt)
        return [self._round(ask, state)]

    def observe(self, results: list[Observation]) -> None:
        """Nothing to keep: the next ask is derived from the history each round."""

    def _round(self, ask: Ask, state: ProposerState) -> Candidate:
        with tempfile.TemporaryDirectory(prefix="kernelopt-agent-") as tmp:
            hypothesis_file = Path(tmp) / "hypothesis.txt"
            context = build_context(
                ask,
                state,
                self.program,
                run_id=self.repo.run_id,
                worktree=self.repo.worktree,
                hypothesis_file=hypothesis_file,
            )
            (Path(tmp) / "context.md").write_text(render_context(context))
            (Path(tmp) / "context.json").write_text(json.dumps(context, indent=1, default=str))
            env = {
                "KERNELOPT_CONTEXT": str(Path(tmp) / "context.md"),
                "KERNELOPT_CONTEXT_JSON": str(Path(tmp) / "context.json"),
                "KERNELOPT_HYPOTHESIS_FILE": str(hypothesis_file),
                "KERNELOPT_RUN": self.repo.run_id,
                "KERNELOPT_MODE": ask.mode,
            }
            outcome = run_local(self.command, self.repo.worktree, env, self.timeout_s)
            written = hypothesis_file.read_text().strip() if hypothesis_file.exists() else ""
        hypothesis = written or ask.hypothesis or "(the agent gave no hypothesis)"
        extra = ask_fields(ask)
        extra["agent_log_tail"] = "\n".join(outcome.output.splitlines()[-40:])
        if outcome.timed_out or outcome.returncode != 0:
            what = (
                f"the agent timed out after {self.timeout_s:g} s"
                if outcome.timed_out
                else f"the agent exited with status {outcome.returncode}"
            )
            failure = Measurement.failure(FAILED, what, log_tail=extra["agent_log_tail"])
            return Candidate(AGENT, hypothesis, failure=failure, extra=extra)
        return Candidate(AGENT, hypothesis, in_worktree=True, extra=extra)


def _commit_of(state: ProposerState, attempt: int) -> str:
    return next(seen.commit for seen in state.history if seen.attempt == attempt)


__all__ = ["AgentProposer"]
