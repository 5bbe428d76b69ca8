"""The git note of one attempt: its measurement, verdict, gains and counters, as JSON.

Pure: everything it records is passed in. The note is the attempt's record of
truth (history.py rebuilds the run from notes alone), so its keys are stable.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
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
        "content_key": content_key,
        "reused_from": reused_from,
        "knobs": att.knobs,
        "signature": att.signature,
        "files": list(files),
        "error": judgement.error,
        "time": time,
    }
    note.update(att.extra)
    if verdict == Verdict.BASELINE:
        note["reference"] = reference
    if measure_s is not None:
        note["timings"] = {"measure_s": round(measure_s, 4)}
    return note
