"""The verdict for one attempt from its samples: pure, no git and no devices.

``judge(samples, best, rule)`` turns what sampling measured into a
``Judgement``: a failed sample decides at once (failed, incorrect,
interrupted); a deterministic target compares its one sample with BEST's
recorded numbers; a noisy one applies the paired noise rule of decide.py to
candidate/BEST pairs measured side by side, overall and per config class.
``paired`` is the same rule on its own, which sampling asks after every pair
whether to measure another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelopt.decide import (
    Assessment,
    Spread,
    Verdict,
    assess_deterministic,
    assess_paired,
    combine_classes,
    explain,
    gain,
    log_gain,
    spread_of,
)
from kernelopt.measurement import FAILED, INCORRECT, INTERRUPTED, REFUSED, Measurement
from kernelopt.records import Pair


@dataclass(frozen=True)
class Rule:
    """How a run compares a candidate with BEST (program.md's metric and decide keys)."""

    metric: str  # the key read from each measurement
    better: str  # "higher" | "lower"
    noise: float
    confirm: int = 2
    max_samples: int = 24
    prior: Spread = field(default_factory=Spread)  # pooled from the run's earlier decisions


@dataclass(frozen=True)
class Best:
    """BEST as recorded: its metric and per-class means."""

    metric: float | None
    classes: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Judgement:
    """A verdict (None: measure another pair) with the evidence behind it.

    ``metric`` is the candidate's mean over its samples; ``gain`` the relative
    change the verdict rests on (against BEST re-measured beside it when it
    was, else against BEST's recorded metric), positive = better.
    ``measurement`` is the candidate's measurement the note keeps.
    """

    verdict: Verdict | None
    metric: float | None = None
    gain: float | None = None
    classes: dict[str, float] = field(default_factory=dict)
    improved: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()
    spread: Spread | None = None
    error: str = ""
    measurement: Measurement | None = None
    # One sentence naming the rule that decided the verdict (decide.explain).
    reason: str = ""


def _classes(m: Measurement) -> dict[str, float]:
    return dict(m.extra.get("classes") or {})


def _mean(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None) / len(values)


def paired(samples: Sequence[Pair], rule: Rule) -> Judgement:
    """The noise rule over interleaved pairs, overall and per config class."""
    measured = [(c, b) for c, b in samples if b is not None]
    pairs = [(c.value(rule.metric), b.value(rule.metric)) for c, b in measured]
    if any(c is None or b is None for c, b in pairs):
        return Judgement(Verdict.FAILED)
    values = [(float(c), float(b)) for c, b in pairs]  # type: ignore[arg-type]

    def assess(points: list[tuple[float, float]]) -> Any:
        return assess_paired(
            points, rule.better, rule.noise, rule.confirm, rule.max_samples, rule.prior
        )

    overall = assess(values)
    names = set(_classes(measured[0][0])) if measured else set()
    for c, b in measured:
        names &= set(_classes(c)) & set(_classes(b))
    per_class = {
        k: assess([(_classes(c)[k], _classes(b)[k]) for c, b in measured]) for k in sorted(names)
    }
    spread = spread_of([log_gain(c, b, rule.better) for c, b in values])
    shown = (
        gain(
            sum(c for c, _ in values) / len(values),
            sum(b for _, b in values) / len(values),
            rule.better,
        )
        if values
        else None
    )
    reason = explain(overall, rule.noise, shown, rule.better) if overall.verdict is not None else ""
    if not per_class:
        return Judgement(overall.verdict, gain=overall.gain, spread=spread, reason=reason)
    judged = combine_classes(overall, per_class)
    if judged is None:
        return Judgement(None, gain=overall.gain, spread=spread)
    # Recorded like the overall gain (and like a deterministic target's classes):
    # the plain relative change of the class means; the rule itself uses log ratios.
    class_gains = {
        k: gain(
            sum(_classes(c)[k] for c, _ in measured) / len(measured),
            sum(_classes(b)[k] for _, b in measured) / len(measured),
            rule.better,
        )
        for k in per_class
    }
    return Judgement(
        judged.verdict,
        gain=overall.gain,
        classes=class_gains,
        improved=judged.improved,
        regressed=judged.regressed,
        spread=spread,
        reason=_class_reason(judged.verdict, overall, judged.improved, judged.regressed, reason),
    )


def _class_reason(
    verdict: Verdict,
    overall: Assessment,
    improved: Sequence[str],
    regressed: Sequence[str],
    overall_reason: str,
) -> str:
    """Why per-class assessments changed (or kept) the overall verdict."""
    if verdict == Verdict.DIVERGED:
        return (
            f"config classes diverged: {', '.join(improved)} improved and "
            f"{', '.join(regressed)} regressed beyond the noise setting, so it is not kept"
        )
    if verdict == Verdict.REGRESSION and overall.verdict != Verdict.REGRESSION:
        return (
            f"config class {', '.join(regressed)} regressed beyond the noise setting "
            f"(overall: {overall_reason})"
        )
    if verdict == Verdict.TIE and overall.verdict == Verdict.KEEP:
        return f"overall better ({overall_reason}), but the target class did not improve"
    return overall_reason


def deterministic(candidate: Measurement, metric: float, best: Best, rule: Rule) -> Judgement:
    """One sample per side is the truth: compare with BEST's recorded numbers."""
    assert best.metric is not None
    overall = assess_deterministic(metric, best.metric, rule.better, rule.noise)
    per_class = {
        k: assess_deterministic(v, best.classes[k], rule.better, rule.noise)
        for k, v in _classes(candidate).items()
        if k in best.classes
    }
    judged = combine_classes(overall, per_class) if per_class else None
    reason = explain(overall, rule.noise)
    if judged is None:
        return Judgement(overall.verdict, gain=overall.gain, reason=reason)
    return Judgement(
        judged.verdict,
        gain=overall.gain,
        classes=judged.gains,
        improved=judged.improved,
        regressed=judged.regressed,
        reason=_class_reason(judged.verdict, overall, judged.improved, judged.regressed, reason),
    )


_FAILURE_VERDICT = {
    INCORRECT: Verdict.INCORRECT,
    INTERRUPTED: Verdict.INTERRUPTED,
    REFUSED: Verdict.REFUSED,
}


def _failure(samples: Sequence[Pair], candidate: Measurement) -> tuple[Verdict, str, Measurement]:
    """The verdict, error and measurement when some sample failed (candidate's or BEST's)."""
    failed = next(c for c, b in samples if not c.ok or (b is not None and not b.ok))
    if not failed.ok:
        return _FAILURE_VERDICT.get(failed.status, Verdict.FAILED), failed.error, failed
    # BEST failing its re-measure is the device's or host's failure, never the
    # candidate's (sampling.py raises it as a host fault; this is for samples given
    # directly): interrupted, not a verdict on the candidate.
    bad = next(b for _, b in samples if b is not None and not b.ok)
    error = f"re-measuring BEST failed ({bad.status}), not the candidate: {bad.error}"
    return Verdict.INTERRUPTED, error, candidate


def judge(
    samples: Sequence[Pair],
    best: Best | None,
    rule: Rule,
    *,
    deterministic_target: bool,
    reused: Judgement | None = None,
) -> Judgement:
    """The final verdict of one attempt (never None: an undecided comparison is a tie).

    ``best`` is None for a baseline, which has nothing to compare with.
    ``reused`` carries an earlier attempt's verdict and gain when a noisy
    target's same tree was measured against the same BEST before.
    """
    candidate = samples[-1][0] if samples else Measurement.failure(FAILED, "not measured")
    metric = _mean([c.value(rule.metric) for c, _ in samples if c.ok])
    if any(not c.ok or (b is not None and not b.ok) for c, b in samples):
        verdict, error, candidate = _failure(samples, candidate)
        judged = Judgement(verdict, error=error, reason=_failure_reason(verdict, error))
    elif metric is None:
        produced = ", ".join(sorted({*candidate.metrics, *candidate.profile})) or "nothing"
        error = f"the target did not produce the metric {rule.metric!r} (it produced: {produced})"
        judged = Judgement(
            Verdict.FAILED, error=error, reason=_failure_reason(Verdict.FAILED, error)
        )
    elif best is None:
        judged = Judgement(Verdict.BASELINE, reason="the run's first measurement: BEST starts here")
    elif reused is not None and not deterministic_target:
        judged = reused
    elif deterministic_target or all(b is None for _, b in samples):
        judged = deterministic(candidate, metric, best, rule)
    else:
        judged = paired(samples, rule)
        if judged.verdict is None:  # sampling stopped before the rule decided
            judged = Judgement(
                Verdict.TIE,
                gain=judged.gain,
                spread=judged.spread,
                reason=f"undecided after {len(samples)} pair(s): not kept",
            )
    shown = judged.gain
    if metric is not None and best is not None and reused is None:
        # Recorded as the plain relative change against BEST (the mean of BEST's
        # interleaved samples when it was re-measured); the rule works on log ratios.
        reference = _mean([b.value(rule.metric) for _, b in samples if b is not None and b.ok])
        reference = reference if reference is not None else best.metric
        if reference is not None:
            shown = gain(metric, reference, rule.better)
    return Judgement(
        judged.verdict or Verdict.TIE,
        metric=metric,
        gain=shown,
        classes=judged.classes,
        improved=judged.improved,
        regressed=judged.regressed,
        spread=judged.spread,
        error=judged.error or candidate.error,
        measurement=candidate,
        reason=judged.reason,
    )


def _failure_reason(verdict: Verdict, error: str) -> str:
    first = error.strip().splitlines()[0][:200] if error.strip() else "no error text"
    if verdict == Verdict.INCORRECT:
        return f"the result failed the correctness check, so its speed does not count: {first}"
    if verdict == Verdict.INTERRUPTED:
        return f"the measurement was interrupted before a verdict: {first}"
    return f"the measurement failed, so there is nothing to compare: {first}"
