"""The git note of one attempt: its measurement, verdict, gains and counters, as JSON.

Pure: everything it records is passed in. The note is the attempt's record of
truth (history.py rebuilds the run from notes alone), so its keys are stable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelopt.decide import Outcome, Verdict
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
    previous_best: float | None


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
    """``vs BEST re-measured beside it (6 pairs)`` or ``vs recorded BEST``: one wording
    everywhere; ``detail`` goes inside the parentheses (``6 pairs: 76.15 vs 73.05``)."""
    if not basis:
        return ""
    if basis["against"] == "remeasured":
        pairs = basis["pairs"]
        detail = f": {detail}" if detail else ""
        return f"vs BEST re-measured beside it ({pairs} pair{'s' if pairs != 1 else ''}{detail})"
    return "vs recorded BEST"


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
        "best_metric": (
            judgement.metric if verdict in (Verdict.KEEP, Verdict.BASELINE) else ctx.previous_best
        ),
        "previous_best": ctx.previous_best,
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
        "time": time,
    }
    if verdict != Verdict.BASELINE and judgement.gain is not None:
        note["basis"] = basis(note["samples"], ctx.previous_best)
    note.update(att.extra)
    if isinstance(note.get("screen"), dict):  # the sim estimate beside what was measured
        note["screen"] = {**note["screen"], "measured": judgement.metric}
    if verdict == Verdict.BASELINE:
        note["reference"] = reference
    if measure_s is not None:
        note["timings"] = {"measure_s": round(measure_s, 4)}
    return note
