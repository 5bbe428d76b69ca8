"""kernelopt driving a coding agent: one hypothesis per round, from the history.

Each round the agent command runs in the run's worktree with a context file
(``KERNELOPT_CONTEXT``, markdown; ``KERNELOPT_CONTEXT_JSON``, the same as
JSON) built from the notes: the program body, BEST and its profile, the last
attempts, the lessons so far, the counters, and what is asked now (improve,
repair an incorrect candidate, or split a diverged one). The agent edits files
and writes its one-sentence hypothesis to ``KERNELOPT_HYPOTHESIS_FILE``;
kernelopt commits, measures and decides as for any candidate.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.decide import DIVERGED, INCORRECT, KEEP, REGRESSION
from kernelopt.history import AttemptRecord, RunState
from kernelopt.loop import AttemptResult, Runner, RunSummary
from kernelopt.measurement import FAILED, TIMEOUT, Measurement
from kernelopt.targets.command import run_local

IMPROVE = "improve"
REPAIR = "repair"
SPLIT = "split"
HISTORY_SHOWN = 12
PROFILE_FIELDS = (
    "total_time",
    "mfu_estimated_percent",
    "mfu_max_achievable_estimated_percent",
    "mbu_estimated_percent",
    "tensor_engine_active_time_percent",
    "vector_engine_active_time_percent",
    "scalar_engine_active_time_percent",
    "gpsimd_engine_active_time_percent",
    "dma_active_time_percent",
    "dma_transfer_count",
    "hbm_read_bytes",
    "hbm_write_bytes",
)


@dataclass(frozen=True)
class Ask:
    """What the next round is for."""

    mode: str  # improve | repair | split
    attempt: int | None = None  # the attempt being repaired or split
    repair: int = 0  # which repair this is (1-based) in repair mode
    hypothesis: str = ""
    error: str = ""
    improved: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()


def next_ask(state: RunState, repair_attempts: int) -> Ask:
    """Derived from the notes alone, so a restarted driver asks the same thing."""
    if not state.attempts:
        return Ask(IMPROVE)
    last = state.attempts[-1]
    if last.verdict == INCORRECT and last.kind == "agent":
        origin = int(last.note.get("repair_of", last.attempt))
        done = int(last.note.get("repair", 0))
        if done < repair_attempts:
            return Ask(REPAIR, origin, done + 1, last.hypothesis, str(last.note.get("error", "")))
    if last.verdict == DIVERGED and last.kind == "agent" and not last.note.get("split_of"):
        return Ask(
            SPLIT,
            last.attempt,
            hypothesis=last.hypothesis,
            improved=tuple(last.note.get("improved") or ()),
            regressed=tuple(last.note.get("regressed") or ()),
        )
    return Ask(IMPROVE)


def lessons(state: RunState) -> dict[str, list[dict[str, Any]]]:
    """What was kept, what regressed and by how much, what failed and why."""
    out: dict[str, list[dict[str, Any]]] = {
        "kept": [],
        "regressed": [],
        "failed": [],
        "incorrect": [],
        "diverged": [],
        "tied": [],
    }
    bucket = {
        KEEP: "kept",
        REGRESSION: "regressed",
        FAILED: "failed",
        TIMEOUT: "failed",
        INCORRECT: "incorrect",
        DIVERGED: "diverged",
        "tie": "tied",
    }
    for record in state.attempts:
        name = bucket.get(record.verdict)
        if name is None:
            continue
        entry: dict[str, Any] = {
            "attempt": record.attempt,
            "hypothesis": record.hypothesis,
            "gain": record.note.get("gain"),
        }
        if record.verdict in (FAILED, INCORRECT, TIMEOUT):
            entry["why"] = str(record.note.get("error", "")).splitlines()[0:1]
            entry["why"] = entry["why"][0][:300] if entry["why"] else ""
        if record.verdict == DIVERGED:
            entry["improved"] = record.note.get("improved")
            entry["regressed"] = record.note.get("regressed")
        out[name].append(entry)
    return out


def render_lessons(data: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    titles = {
        "kept": "Kept (ideas that worked)",
        "regressed": "Regressed (do not repeat)",
        "diverged": "Diverged (better for some configs, worse for others)",
        "incorrect": "Incorrect (broke the numbers)",
        "failed": "Failed (did not build or run)",
        "tied": "Within noise",
    }
    for key, title in titles.items():
        entries = data.get(key) or []
        if not entries:
            continue
        lines.append(f"{title}:")
        for e in entries:
            gain = "" if e.get("gain") is None else f" ({e['gain'] * 100:+.2f}%)"
            why = f" — {e['why']}" if e.get("why") else ""
            extra = ""
            if key == "diverged":
                extra = f" better: {', '.join(e.get('improved') or [])}; worse: {', '.join(e.get('regressed') or [])}"
            lines.append(f"  #{e['attempt']}{gain} {e['hypothesis']}{why}{extra}")
    return "\n".join(lines) + ("\n" if lines else "")


def build_context(runner: Runner, ask: Ask, hypothesis_file: Path) -> dict[str, Any]:
    state = runner.state
    assert state is not None
    best = state.best
    base = state.baseline
    program = runner.program
    recent = [
        {
            "attempt": r.attempt,
            "kind": r.kind,
            "hypothesis": r.hypothesis,
            "verdict": r.verdict,
            "metric": r.metric,
            "gain": r.note.get("gain"),
            "error": str(r.note.get("error", ""))[:500],
            "improved": r.note.get("improved"),
            "regressed": r.note.get("regressed"),
        }
        for r in state.attempts[-HISTORY_SHOWN:]
    ]
    profile = (best.measurement.get("profile") if best else None) or {}
    counters = state.counters
    return {
        "run": runner.run_id,
        "worktree": str(runner.repo.worktree),
        "program": program.body,
        "metric": {"name": program.metric, "better": program.better},
        "best": {
            "commit": state.best_commit,
            "attempt": best.attempt if best else None,
            "metric": best.metric if best else None,
            "profile": {k: profile[k] for k in PROFILE_FIELDS if k in profile},
            "classes": ((best.measurement.get("extra") or {}).get("classes") if best else None)
            or {},
        },
        "baseline": base.metric if base else None,
        "target": program.stop.target,
        "recent_attempts": recent,
        "lessons": lessons(state),
        "counters": {
            "consecutive_regressions": counters.consecutive_regressions,
            "max_consecutive_regressions": program.decide.max_consecutive_regressions,
            "recent_regressions": list(counters.recent_regressions),
        },
        "ask": {
            "mode": ask.mode,
            "attempt": ask.attempt,
            "repair": ask.repair,
            "repairs_allowed": program.decide.repair_attempts,
            "hypothesis": ask.hypothesis,
            "error": ask.error,
            "improved": list(ask.improved),
            "regressed": list(ask.regressed),
        },
        "hypothesis_file": str(hypothesis_file),
    }


def render_context(ctx: dict[str, Any]) -> str:
    """The context as markdown for a language-model agent (the JSON twin has the same data)."""
    ask = ctx["ask"]
    if ask["mode"] == REPAIR:
        task = (
            f"REPAIR attempt #{ask['attempt']} (repair {ask['repair']} of {ask['repairs_allowed']}). "
            "Its numbers are wrong. The worktree holds that candidate. Keep the same idea "
            f'("{ask["hypothesis"]}") and make only the smallest change that restores correctness.\n\n'
            f"Error:\n```\n{ask['error']}\n```"
        )
    elif ask["mode"] == SPLIT:
        task = (
            f'SPLIT attempt #{ask["attempt"]} ("{ask["hypothesis"]}"): it made these config '
            f"classes faster: {', '.join(ask['improved'])}; and these slower: "
            f"{', '.join(ask['regressed'])}. The worktree holds that candidate. Keep the old path "
            "for the classes that regressed and dispatch only the classes that improved to the "
            "new path, by their config values."
        )
    else:
        task = (
            "IMPROVE: the worktree is at BEST. Pick one bottleneck from the numbers below, "
            "form one hypothesis, and make one focused change."
        )
    best = ctx["best"]
    lines = [
        f"# kernelopt round for run {ctx['run']}",
        "",
        "## What is asked now",
        "",
        task,
        "",
        f"When done editing, write your one-sentence hypothesis to `{ctx['hypothesis_file']}` "
        "and exit 0. Do not commit: kernelopt commits, measures and decides.",
        "",
        "## Best so far",
        "",
        f"- {ctx['metric']['name']} ({ctx['metric']['better']} is better): {best['metric']} "
        f"at attempt #{best['attempt']} (commit {str(best['commit'])[:10]}); baseline {ctx['baseline']}"
        + (f"; target {ctx['target']}" if ctx.get("target") is not None else ""),
    ]
    for key, value in best["profile"].items():
        lines.append(f"- {key}: {value}")
    for key, value in best["classes"].items():
        lines.append(f"- class {key}: {value}")
    lines += ["", "## Recent attempts", ""]
    for a in ctx["recent_attempts"]:
        gain = "" if a["gain"] is None else f" {a['gain'] * 100:+.2f}%"
        err = f" — {a['error'].splitlines()[0]}" if a["error"] else ""
        lines.append(f"- #{a['attempt']} {a['verdict']}{gain}: {a['hypothesis']}{err}")
    c = ctx["counters"]
    lines += [
        "",
        "## Counters",
        "",
        f"- consecutive regressions: {c['consecutive_regressions']} of {c['max_consecutive_regressions']}",
        "",
        "## Lessons so far",
        "",
        render_lessons(ctx["lessons"]) or "(none yet)",
        "",
        "## The program",
        "",
        ctx["program"],
    ]
    return "\n".join(lines)


class AgentDriver:
    """Runs rounds of an agent command against a Runner until a stop condition."""

    def __init__(self, runner: Runner, command: str, timeout_s: float = 1800.0):
        self.runner = runner
        self.command = command
        self.timeout_s = timeout_s

    def run(self, max_candidates: int | None = None) -> RunSummary:
        runner = self.runner
        started = time.monotonic()
        runner.open()
        state = runner.state
        assert state is not None
        if state.stop:
            return runner.summary(f"already stopped: {state.stop.get('reason')}", stopped=True)
        baseline = runner.ensure_baseline()
        if baseline is not None and baseline.verdict != "baseline":
            return runner.summary(
                f"the baseline could not be measured: {baseline.error}", failed=True
            )
        count = 0
        for result in runner.measure_pending():
            count += 1
            if result.stop:
                return runner.summary(result.stop_reason or "stopped", stopped=True)
        while True:
            reason = runner.stop_reason(started, count, max_candidates)
            if reason:
                return runner.summary(reason)
            result = self.round()
            count += 1
            if result.stop:
                return runner.summary(result.stop_reason or "stopped", stopped=True)

    def round(self) -> AttemptResult:
        """One agent invocation, committed and decided as one attempt."""
        runner = self.runner
        state = runner.state
        assert state is not None and state.best_commit is not None
        ask = next_ask(state, runner.program.decide.repair_attempts)
        if ask.mode in (REPAIR, SPLIT) and ask.attempt is not None:
            # Start from the candidate being repaired or split, on top of BEST.
            source = _attempt(
                state, ask.attempt if ask.mode == SPLIT else state.attempts[-1].attempt
            )
            runner.repo.reset_to(state.best_commit)
            runner.repo.wt("checkout", source.commit, "--", ".")
        with tempfile.TemporaryDirectory(prefix="kernelopt-agent-") as tmp:
            hyp_file = Path(tmp) / "hypothesis.txt"
            ctx = build_context(runner, ask, hyp_file)
            (Path(tmp) / "context.md").write_text(render_context(ctx))
            (Path(tmp) / "context.json").write_text(json.dumps(ctx, indent=1, default=str))
            env = {
                "KERNELOPT_CONTEXT": str(Path(tmp) / "context.md"),
                "KERNELOPT_CONTEXT_JSON": str(Path(tmp) / "context.json"),
                "KERNELOPT_HYPOTHESIS_FILE": str(hyp_file),
                "KERNELOPT_RUN": runner.run_id,
                "KERNELOPT_MODE": ask.mode,
            }
            runner.reporter.event("agent", mode=ask.mode, attempt=ask.attempt)
            outcome = run_local(self.command, runner.repo.worktree, env, self.timeout_s)
            hypothesis = hyp_file.read_text().strip() if hyp_file.exists() else ""
        hypothesis = hypothesis or ask.hypothesis or "(the agent gave no hypothesis)"
        extra = _ask_fields(ask)
        extra["agent_log_tail"] = "\n".join(outcome.output.splitlines()[-40:])
        if outcome.timed_out or outcome.returncode != 0:
            what = (
                f"the agent timed out after {self.timeout_s:g} s"
                if outcome.timed_out
                else f"the agent exited with status {outcome.returncode}"
            )
            failure = Measurement.failure(FAILED, what, log_tail=extra["agent_log_tail"])
            return runner.record_failure("agent", hypothesis, failure, extra)
        return runner.try_worktree(hypothesis, "agent", extra=extra)


def _attempt(state: RunState, n: int) -> AttemptRecord:
    return next(r for r in state.attempts if r.attempt == n)


def _ask_fields(ask: Ask) -> dict[str, Any]:
    if ask.mode == REPAIR:
        return {"repair_of": ask.attempt, "repair": ask.repair}
    if ask.mode == SPLIT:
        return {"split_of": ask.attempt}
    return {}


__all__ = ["AgentDriver", "Ask", "build_context", "lessons", "next_ask", "render_context"]
