"""What a coding agent is told each round: the ask, and the context built from the history.

The context (``KERNELOPT_CONTEXT``, markdown; ``KERNELOPT_CONTEXT_JSON``, the
same as JSON) holds the program body, BEST and its profile, the last
attempts, the lessons so far, the counters, and what is asked now: improve,
repair an incorrect candidate, or split a diverged one. Everything is derived
from the run's observations, so a restarted runner asks the same thing. The
agent itself runs as a proposer (proposers/agent.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.decide import Verdict
from kernelopt.measurement import TIMEOUT
from kernelopt.program import Program
from kernelopt.proposers.base import Observation, ProposerState

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


def next_ask(history: Sequence[Observation], repair_attempts: int) -> Ask:
    """Derived from the recorded attempts alone, so a restarted runner asks the same thing."""
    if not history:
        return Ask(IMPROVE)
    last = history[-1]
    if last.verdict == Verdict.INCORRECT and last.kind == "agent":
        origin = int(last.asked.get("repair_of", last.attempt))
        done = int(last.asked.get("repair", 0))
        if done < repair_attempts:
            error = last.error
            if last.output_tail:
                error += f"\n\nits output ended with:\n{last.output_tail}"
            return Ask(REPAIR, origin, done + 1, last.hypothesis, error)
    if last.verdict == Verdict.DIVERGED and last.kind == "agent" and not last.asked.get("split_of"):
        return Ask(
            SPLIT,
            last.attempt,
            hypothesis=last.hypothesis,
            improved=last.improved,
            regressed=last.regressed,
        )
    return Ask(IMPROVE)


def ask_fields(ask: Ask) -> dict[str, Any]:
    """What the answering attempt's note records of the ask."""
    if ask.mode == REPAIR:
        return {"repair_of": ask.attempt, "repair": ask.repair}
    if ask.mode == SPLIT:
        return {"split_of": ask.attempt}
    return {}


def lessons(history: Sequence[Observation]) -> dict[str, list[dict[str, Any]]]:
    """What was kept, what regressed and by how much, what failed and why."""
    out: dict[str, list[dict[str, Any]]] = {
        "kept": [],
        "regressed": [],
        "failed": [],
        "incorrect": [],
        "diverged": [],
        "tied": [],
        "refused": [],
    }
    bucket = {
        Verdict.KEEP: "kept",
        Verdict.REGRESSION: "regressed",
        Verdict.FAILED: "failed",
        TIMEOUT: "failed",
        Verdict.INCORRECT: "incorrect",
        Verdict.DIVERGED: "diverged",
        Verdict.TIE: "tied",
        Verdict.REFUSED: "refused",
    }
    for seen in history:
        name = bucket.get(seen.verdict)
        if name is None:
            continue
        entry: dict[str, Any] = {
            "attempt": seen.attempt,
            "hypothesis": seen.hypothesis,
            "gain": seen.gain,
        }
        if seen.reason:
            entry["reason"] = seen.reason
        if seen.verdict in (Verdict.FAILED, Verdict.INCORRECT, TIMEOUT, Verdict.REFUSED):
            first = seen.error.splitlines()[0:1]
            entry["why"] = first[0][:300] if first else ""
            entry["output"] = seen.output_tail  # the benchmark's own last lines
        if seen.verdict == Verdict.DIVERGED:
            entry["improved"] = list(seen.improved)
            entry["regressed"] = list(seen.regressed)
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
        "refused": "Refused (changed a fixed path: never measured)",
    }
    for key, title in titles.items():
        entries = data.get(key) or []
        if not entries:
            continue
        lines.append(f"{title}:")
        for e in entries:
            gain = "" if e.get("gain") is None else f" ({e['gain'] * 100:+.2f}%)"
            why = f" — {e['why']}" if e.get("why") else ""
            if key == "tied" and e.get("reason"):  # a large tie may be worth another look
                why = f" — {e['reason']}"
            extra = ""
            if key == "diverged":
                extra = f" better: {', '.join(e.get('improved') or [])}; worse: {', '.join(e.get('regressed') or [])}"
            lines.append(f"  #{e['attempt']}{gain} {e['hypothesis']}{why}{extra}")
            lines += [
                f"      | {line}" for line in _shown_tail(e.get("output") or "", e.get("why"))
            ]
    return "\n".join(lines) + ("\n" if lines else "")


def _shown_tail(tail: str, error: str | None, limit: int = 8) -> list[str]:
    """The last lines of a failure's output worth printing under its error line."""
    lines = [line[:200] for line in tail.splitlines() if line.strip()][-limit:]
    if lines and error and lines == [error.strip()]:
        return []
    return lines


def build_context(
    ask: Ask,
    state: ProposerState,
    program: Program,
    *,
    run_id: str,
    worktree: Path,
    hypothesis_file: Path,
) -> dict[str, Any]:
    best = state.best
    recent = [
        {
            "attempt": seen.attempt,
            "kind": seen.kind,
            "hypothesis": seen.hypothesis,
            "verdict": seen.verdict,
            "metric": seen.metric,
            "gain": seen.gain,
            "error": seen.error[:500],
            "reason": seen.reason,
            "output_tail": seen.output_tail,
            "improved": list(seen.improved),
            "regressed": list(seen.regressed),
        }
        for seen in state.history[-HISTORY_SHOWN:]
    ]
    profile = best.profile if best else {}
    return {
        "run": run_id,
        "worktree": str(worktree),
        "program": program.body,
        "metric": {"name": program.metric, "better": program.better},
        "best": {
            "commit": state.best_commit,
            "attempt": best.attempt if best else None,
            "metric": state.best_metric,
            "profile": {k: profile[k] for k in PROFILE_FIELDS if k in profile},
            "classes": dict(best.classes) if best else {},
        },
        "baseline": state.baseline_metric,
        "target": program.stop.target,
        "recent_attempts": recent,
        "lessons": lessons(state.history),
        "counters": {
            "consecutive_regressions": state.consecutive_regressions,
            "max_consecutive_regressions": program.decide.max_consecutive_regressions,
            "recent_regressions": list(state.recent_regressions),
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
        if a.get("reason") and a["verdict"] != Verdict.BASELINE:
            lines.append(f"  why: {a['reason']}")
        tail = a.get("output_tail") or ""
        if tail:
            lines += [
                "  its output ended with:",
                "  ```",
                *(f"  {t}" for t in tail.splitlines()),
                "  ```",
            ]
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


__all__ = [
    "Ask",
    "ask_fields",
    "build_context",
    "lessons",
    "next_ask",
    "render_context",
    "render_lessons",
]
