"""The keep/revert rule: pure functions, no I/O.

Gains are relative and signed so that positive always means better, whatever
the metric's direction. A noisy target is judged on paired samples (candidate
and BEST measured interleaved in the same session), so a lucky BEST sample
cannot turn honest candidates into regressions, and one lucky candidate
sample cannot be kept.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """What one attempt came to. The values are what notes, JSON and the ledger say."""

    BASELINE = "baseline"
    KEEP = "keep"
    TIE = "tie"
    REGRESSION = "regression"
    INCORRECT = "incorrect"
    FAILED = "failed"
    DIVERGED = "diverged"
    INTERRUPTED = "interrupted"
    REFUSED = "refused"  # changed a fixed path (target.fixed): never measured, never kept


# One-sided Student t quantiles at 99.9 % by degrees of freedom. A decision is
# re-examined after every new pair, so each look must be strict for the whole
# sequence to keep false keeps under 1 % (benchmarks/noise.py measures it).
_T999 = (
    (1, 318.3),
    (2, 22.33),
    (3, 10.21),
    (4, 7.173),
    (5, 5.893),
    (6, 5.208),
    (7, 4.785),
    (8, 4.501),
    (9, 4.297),
    (10, 4.144),
    (12, 3.930),
    (15, 3.733),
    (20, 3.552),
    (30, 3.385),
    (60, 3.232),
    (120, 3.160),
)
_Z999 = 3.090
# Futility: a candidate whose optimistic (one standard error) gain is still
# inside the noise band will not become a keep; stop measuring it.
_FUTILITY_SE = 1.0


def _t(df: int) -> float:
    for (d0, t0), (d1, t1) in itertools.pairwise(_T999):
        if df <= d0:
            return t0
        if df < d1:
            return t0 + (t1 - t0) * (df - d0) / (d1 - d0)
    return _Z999 if df > 1000 else _T999[-1][1]


@dataclass(frozen=True)
class Spread:
    """The run's pooled variance of paired log gains, with its degrees of freedom."""

    var: float = 0.0
    df: int = 0

    def pooled(self, other: Spread) -> Spread:
        df = self.df + other.df
        if df == 0:
            return Spread()
        return Spread((self.var * self.df + other.var * other.df) / df, df)


def spread_of(gains: Sequence[float]) -> Spread:
    n = len(gains)
    if n < 2:
        return Spread()
    mean = sum(gains) / n
    return Spread(sum((g - mean) ** 2 for g in gains) / (n - 1), n - 1)


def gain(candidate: float, best: float, better: str) -> float:
    """Relative change of ``candidate`` vs ``best``; positive = better."""
    if best == 0:
        if candidate == best:
            return 0.0
        scale = abs(candidate)
    else:
        scale = abs(best)
    delta = (candidate - best) / scale
    # + 0.0 turns -0.0 into 0.0, so an unchanged metric never prints as "-0.00%".
    return (delta if better == "higher" else -delta) + 0.0


def log_gain(candidate: float, best: float, better: str) -> float:
    """Symmetric gain for positive metrics (log ratio), falling back to ``gain``."""
    if candidate > 0 and best > 0:
        # A difference of logs, not the log of a ratio: 1e10 / 1e-300 overflows to inf.
        g = math.log(candidate) - math.log(best)
        return g if better == "higher" else -g
    return gain(candidate, best, better)


@dataclass(frozen=True)
class Assessment:
    """A verdict (or None: measure another pair) and the evidence behind it."""

    verdict: Verdict | None
    gain: float  # mean relative gain, positive = better
    low: float  # confidence bounds on the gain
    high: float
    samples: int
    # Which branch of the rule decided: significant, inside, hopeless, undecided
    # (max_samples reached) or deterministic; see ``explain``.
    rule: str = ""


def assess_deterministic(candidate: float, best: float, better: str, noise: float) -> Assessment:
    """One sample each is the truth: a small win repeats by construction, so it is kept."""
    g = gain(candidate, best, better)
    if g > 1e-12:
        verdict = Verdict.KEEP
    elif g < -noise:
        verdict = Verdict.REGRESSION
    else:
        verdict = Verdict.TIE
    return Assessment(verdict, g, g, g, 1, "deterministic")


def assess_paired(
    pairs: Sequence[tuple[float, float]],
    better: str,
    noise: float,
    confirm: int = 2,
    max_samples: int = 24,
    prior: Spread | None = None,
) -> Assessment:
    """Judge interleaved (candidate, best) samples; None asks for another pair.

    keep: the gain is significantly above zero and beyond the noise threshold
    (a win that repeats in the same direction). regression: significantly
    below zero and beyond the noise. tie: confidently inside the noise band,
    hopeless (even an optimistic reading stays inside it), or still undecided
    after ``max_samples`` pairs. ``prior`` is the spread pooled from earlier
    decisions of the same run, which narrows the bounds on few samples.
    """
    n = len(pairs)
    gains = [log_gain(c, b, better) for c, b in pairs]
    if n == 0:
        return Assessment(None, 0.0, -math.inf, math.inf, 0)
    mean = sum(gains) / n
    if n < max(confirm, 2):
        return Assessment(None, mean, -math.inf, math.inf, n)
    spread = spread_of(gains).pooled(prior or Spread())
    # A floor on the spread: identical samples must not look infinitely certain.
    sd = max(math.sqrt(spread.var), noise / 10)
    se = sd / math.sqrt(n)
    half = _t(spread.df) * se
    low, high = mean - half, mean + half
    rule = ""
    if low > 0 and mean > noise:
        verdict: Verdict | None = Verdict.KEEP
        rule = "significant"
    elif high < 0 and mean < -noise:
        verdict = Verdict.REGRESSION
        rule = "significant"
    elif low > -noise and high < noise:
        verdict = Verdict.TIE
        rule = "inside"
    elif n >= 3 and mean > -noise and mean + _FUTILITY_SE * se < noise:
        verdict = Verdict.TIE
        rule = "hopeless"
    elif n >= max_samples:
        verdict = Verdict.TIE
        rule = "undecided"
    else:
        verdict = None
    return Assessment(verdict, mean, low, high, n, rule)


_LOG_LIMIT = 700.0  # math.exp overflows a float just past 709


def _pct(x: float, better: str) -> str:
    """A log-ratio gain as the relative change ``gain`` reports (``+14.4 %``)."""
    x = max(-_LOG_LIMIT, min(_LOG_LIMIT, x))  # a BEST of 1e-300 gives log ratios past exp's range
    relative = math.exp(x) - 1 if better == "higher" else 1 - math.exp(-x)
    return f"{relative * 100:+.1f} %"


def explain(a: Assessment, noise: float, shown: float | None = None, better: str = "lower") -> str:
    """One sentence naming the branch of the noise rule that decided ``a``.

    ``shown`` is the gain as recorded (plain relative change of the means);
    the bounds are the rule's own (99.9 % one-sided, on log ratios).
    """
    band = f"{noise * 100:g} %"
    if a.rule == "deterministic":
        g = f"{a.gain * 100:+.2f} %"
        if a.verdict == Verdict.KEEP:
            return f"{g} vs BEST: a deterministic target repeats any gain, so it is kept"
        if a.verdict == Verdict.REGRESSION:
            return f"{g} vs BEST: worse than the noise setting ({band}) on a deterministic target"
        return f"{g} vs BEST: no gain, and not worse than the noise setting ({band})"
    g = f"{shown * 100:+.1f} %" if shown is not None else _pct(a.gain, better)
    n = f"{a.samples} pair{'s' if a.samples != 1 else ''}"
    bounds = f"99.9 % bounds {_pct(a.low, better)} .. {_pct(a.high, better)}"
    half = f"±{(math.exp(min(_LOG_LIMIT, (a.high - a.low) / 2)) - 1) * 100:.1f} %"
    if a.rule == "significant":
        side = "better" if a.verdict == Verdict.KEEP else "worse"
        return f"{g} after {n}: {side} beyond the noise setting ({band}) and significant ({bounds})"
    if a.rule == "inside":
        return f"{g} after {n}: confidently inside the noise band ±{band} ({bounds})"
    if a.rule == "hopeless":
        return (
            f"{g} after {n}: even a reading one standard error better stays inside "
            f"the noise setting ({band}), so more pairs would not make it a keep"
        )
    if a.rule == "undecided":
        return (
            f"{g} but not significant after {n} (decide.max_samples): "
            f"spread {half}, needs p < 0.001 and a gain beyond {band}"
        )
    return f"{g} after {n}"


@dataclass(frozen=True)
class BestFigure:
    """BEST's metric as one estimate: the mean of every sample of BEST so far,
    its own when it was measured and each one re-measured beside a candidate."""

    metric: float | None
    samples: int = 0

    def updated(self, values: Sequence[float]) -> BestFigure:
        """The estimate after more samples of the same BEST."""
        if not values:
            return self
        if self.metric is None or self.samples <= 0:
            return BestFigure(sum(values) / len(values), len(values))
        n = self.samples + len(values)
        return BestFigure((self.metric * self.samples + sum(values)) / n, n)


def kept_figure(
    before: BestFigure, own: Sequence[float], beside: Sequence[float], better: str
) -> BestFigure:
    """The new BEST's figure when a candidate is kept.

    Its own mean, unless that reads worse than the old BEST's estimate
    (``before``, already updated with the samples beside it): then the machine
    got slower since BEST's earlier samples, and the figure is the old
    estimate scaled by the ratio measured side by side, so that a keep never
    shows BEST getting worse. A keep is better than BEST beside it, so the
    scaled figure is better than ``before``.
    """
    mine = BestFigure(sum(own) / len(own), len(own)) if own else BestFigure(None)
    if mine.metric is None or before.metric is None or not beside:
        return mine
    if gain(mine.metric, before.metric, better) >= 0:
        return mine
    ratio = mine.metric / (sum(beside) / len(beside))
    return BestFigure(before.metric * ratio, len(own))


@dataclass(frozen=True)
class ClassJudgement:
    verdict: Verdict
    gains: dict[str, float]
    improved: tuple[str, ...] = ()
    regressed: tuple[str, ...] = ()


def combine_classes(
    overall: Assessment, per_class: Mapping[str, Assessment], target_class: str | None = None
) -> ClassJudgement | None:
    """Fold per-class assessments into one verdict; None while any is undecided.

    A keep needs the target (overall unless named) better and no class worse
    than noise; some classes better while others regress is ``diverged``.
    """
    if overall.verdict is None:
        return None
    undecided = [k for k, a in per_class.items() if a.verdict is None]
    if undecided:
        # A keep must show that no class got worse, so it waits for every
        # class. Otherwise the attempt is not kept whatever the undecided
        # classes do, unless a decided regression beside an improvement
        # makes it diverged; undecided classes then count as ties.
        if overall.verdict == Verdict.KEEP:
            return None
        per_class = {
            k: (a if a.verdict is not None else replace(a, verdict=Verdict.TIE))
            for k, a in per_class.items()
        }
    gains = {k: a.gain for k, a in per_class.items()}
    improved = tuple(sorted(k for k, a in per_class.items() if a.verdict == Verdict.KEEP))
    regressed = tuple(sorted(k for k, a in per_class.items() if a.verdict == Verdict.REGRESSION))
    target = per_class.get(target_class) if target_class else overall
    target_verdict = target.verdict if target is not None else overall.verdict
    if improved and regressed:
        verdict = Verdict.DIVERGED
    elif regressed or target_verdict == Verdict.REGRESSION:
        verdict = Verdict.REGRESSION
    elif target_verdict == Verdict.KEEP:
        verdict = Verdict.KEEP
    else:
        verdict = Verdict.TIE
    return ClassJudgement(verdict, gains, improved, regressed)


@dataclass(frozen=True)
class Counters:
    """The regression bookkeeping the seed keeps by hand."""

    consecutive_regressions: int = 0
    recent_regressions: tuple[dict[str, Any], ...] = ()
    attempts: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "consecutive_regressions": self.consecutive_regressions,
            "recent_regressions": list(self.recent_regressions),
            "attempts": self.attempts,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Counters:
        return cls(
            consecutive_regressions=int(data.get("consecutive_regressions", 0)),
            recent_regressions=tuple(data.get("recent_regressions", ())),
            attempts=int(data.get("attempts", 0)),
        )


@dataclass(frozen=True)
class Outcome:
    counters: Counters
    stop: bool
    stop_reason: str | None = None


def update_counters(
    counters: Counters,
    verdict: str,
    *,
    max_consecutive: int,
    window: int,
    summary: Mapping[str, Any] | None = None,
) -> Outcome:
    """Apply one decided attempt to the counters.

    keep, tie, failed and an abandoned incorrect candidate reset the streak
    and clear the window; a regression extends both; diverged and interrupted
    attempts leave the streak as it was (neither a win nor a clean regression).
    """
    attempts = counters.attempts + (0 if verdict == Verdict.BASELINE else 1)
    if verdict == Verdict.REGRESSION:
        recent = (*counters.recent_regressions, dict(summary or {}))[-window:]
        new = Counters(counters.consecutive_regressions + 1, recent, attempts)
        if new.consecutive_regressions >= max_consecutive:
            reason = f"{new.consecutive_regressions} consecutive measured regressions"
            return Outcome(new, True, reason)
        return Outcome(new, False)
    if verdict in (Verdict.KEEP, Verdict.TIE, Verdict.FAILED, Verdict.INCORRECT, Verdict.BASELINE):
        return Outcome(Counters(0, (), attempts), False)
    return Outcome(replace(counters, attempts=attempts), False)
