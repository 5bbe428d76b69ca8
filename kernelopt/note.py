"""The git note of one attempt: its measurement, verdict, gains and counters, as JSON.

Pure: everything it records is passed in. The note is the attempt's record of
truth (history.py rebuilds the run from notes alone), so its keys are stable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelopt.decide import BestFigure, Outcome, Verdict, kept_figure
from kernelopt.judge import Judgement
from kernelopt.records import Pair, Pending


def now() -> str:
    """The time notes carry: UTC, seconds."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


@dataclass(frozen=True)
class NoteContext:
    """What a note says about the run around the attempt."""

    run_id: str
    program: str  # the program's path relative to the repository
    metric_name: str
    metric_key: str
    device: str
    deterministic: bool
    best_commit: str | None
    previous_best: float | None  # BEST's figure before this attempt (its estimate)
    best_samples: int = 1  # how many samples that estimate averages
    better: str = "lower"


def regression_summary(
    att: Pending, judgement: Judgement, ctx: NoteContext, files: Sequence[str], time: str
) -> dict[str, Any]:
    """What the regression window keeps of an attempt (the Stop Summary lists these)."""
    return {
        "attempt": att.n,
        "time": time,
        "hypothesis": att.hypothesis,
        "files": list(files),
        "best": ctx.previous_best,
        "candidate": judgement.metric,
        "gain": judgement.gain,
        "best_commit": ctx.best_commit,
        "commit": att.sha,
        "notes": "; ".join(f"{k} {v * 100:+.1f}%" for k, v in judgement.classes.items()),
    }


def basis(samples: Sequence[Mapping[str, Any]], previous_best: float | None) -> dict[str, Any]:
    """What the gain was measured against: BEST re-measured beside the candidate on
    the same device (``pairs`` of them, ``best`` their mean), else the recorded BEST."""
    beside = [
        s["best"] for s in samples if s.get("best") is not None and s.get("candidate") is not None
    ]
    if beside:
        return {"against": "remeasured", "pairs": len(beside), "best": sum(beside) / len(beside)}
    return {"against": "recorded", "pairs": 0, "best": previous_best}


def describe_basis(basis: Mapping[str, Any] | None, detail: str = "") -> str:
    """``vs BEST 24.95 measured beside it (7 pairs)`` or ``vs BEST 17.17``: the figure a
    verdict was decided on, one wording everywhere; ``detail`` is added in the parentheses."""
    if not basis:
        return ""
    best = basis.get("best")
    figure = f" {best:.4g}" if isinstance(best, int | float) else ""
    if basis["against"] == "remeasured":
        pairs = basis["pairs"]
        detail = f", {detail}" if detail else ""
        return (
            f"vs BEST{figure} measured beside it ({pairs} pair{'s' if pairs != 1 else ''}{detail})"
        )
    return f"vs BEST{figure}"


# How much of a failed benchmark's output travels with its verdict.
TAIL_LINES = 20
TAIL_CHARS = 2000


def output_tail(text: str) -> str:
    """The last ``TAIL_LINES`` lines of ``text``, at most ``TAIL_CHARS`` characters."""
    tail = "\n".join(text.rstrip().splitlines()[-TAIL_LINES:])
    return tail[-TAIL_CHARS:]


def failure_tail(judgement: Judgement) -> str:
    """The end of a failed measurement's output (the benchmark's stderr and stdout), else ''."""
    m = judgement.measurement
    if m is None or judgement.verdict not in (Verdict.FAILED, Verdict.INCORRECT):
        return ""
    return output_tail(m.log_tail or "")


def best_figures(
    verdict: Verdict, metric: float | None, samples: Sequence[Pair], ctx: NoteContext
) -> tuple[BestFigure, BestFigure]:
    """BEST's figure at the verdict (its estimate with the samples taken beside this
    candidate) and after it (a keep or baseline starts a new BEST)."""
    values = [
        (c.value(ctx.metric_key) if c.ok else None, b.value(ctx.metric_key) if b and b.ok else None)
        for c, b in samples
    ]
    beside = [b for _, b in values if b is not None]
    at_verdict = BestFigure(ctx.previous_best, ctx.best_samples).updated(beside)
    if verdict == Verdict.BASELINE:
        return at_verdict, BestFigure(metric, len([c for c, _ in values if c is not None]) or 1)
    if verdict == Verdict.KEEP and beside:
        own = [c for c, b in values if c is not None and b is not None]
        return at_verdict, kept_figure(at_verdict, own, beside, ctx.better)
    if verdict == Verdict.KEEP:
        return at_verdict, BestFigure(metric, len(values) or 1)
    return at_verdict, at_verdict


def failure_output(note: Mapping[str, Any]) -> str:
    """A failed attempt's output tail from its note, also for notes that predate
    ``output_tail`` (the measurement kept its log tail)."""
    if note.get("verdict") not in (Verdict.FAILED, Verdict.INCORRECT):
        return ""
    if note.get("output_tail"):
        return str(note["output_tail"])
    return output_tail(str((note.get("measurement") or {}).get("log_tail") or ""))


def build_note(
    att: Pending,
    judgement: Judgement,
    samples: Sequence[Pair],
    outcome: Outcome,
    ctx: NoteContext,
    *,
    content_key: str,
    files: Sequence[str],
    reused_from: int | None = None,
    reference: dict[str, Any] | None = None,
    measure_s: float | None = None,
    time: str,
) -> dict[str, Any]:
    """The attempt's note. ``reference`` only for a baseline; ``measure_s`` when measured."""
    verdict = judgement.verdict
    assert verdict is not None and judgement.measurement is not None
    spread = judgement.spread
    at_verdict, after = best_figures(verdict, judgement.metric, samples, ctx)
    note: dict[str, Any] = {
        "kernelopt": 1,
        "run": ctx.run_id,
        "program": ctx.program,
        "attempt": att.n,
        "kind": att.kind,
        "hypothesis": att.hypothesis,
        "verdict": verdict,
        "metric_name": ctx.metric_name,
        "metric": judgement.metric,
        # BEST's figure after this attempt, and how many samples it averages.
        "best_metric": after.metric,
        "best_samples": after.samples,
        "previous_best": at_verdict.metric,
        "best_commit": ctx.best_commit,
        "gain": judgement.gain,
        "classes": judgement.classes,
        "improved": list(judgement.improved),
        "regressed": list(judgement.regressed),
        "counters": outcome.counters.to_json(),
        "stop_reason": outcome.stop_reason,
        "device": ctx.device,
        "deterministic": ctx.deterministic,
        "measurement": judgement.measurement.to_json(),
        "samples": [
            {
                "candidate": c.value(ctx.metric_key),
                "best": b.value(ctx.metric_key) if b else None,
            }
            for c, b in samples
        ],
        "spread": {"var": spread.var, "df": spread.df} if spread else None,
        "basis": None,
        "content_key": content_key,
        "reused_from": reused_from,
        "knobs": att.knobs,
        "signature": att.signature,
        "files": list(files),
        "error": judgement.error,
        "output_tail": failure_tail(judgement),
        "reason": judgement.reason,
        "time": time,
    }
    if verdict != Verdict.BASELINE and judgement.gain is not None:
        note["basis"] = basis(note["samples"], at_verdict.metric)
    note.update(att.extra)
    if isinstance(note.get("screen"), dict):  # the sim estimate beside what was measured
        note["screen"] = {**note["screen"], "measured": judgement.metric}
    if verdict == Verdict.BASELINE:
        note["reference"] = reference
    if measure_s is not None:
        note["timings"] = {"measure_s": round(measure_s, 4)}
    return note
