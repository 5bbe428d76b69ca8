"""The keep/revert rule as unit tests: counters, gains, paired samples, config classes."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelopt.decide import (
    Assessment,
    Counters,
    Spread,
    Verdict,
    assess_deterministic,
    assess_paired,
    combine_classes,
    gain,
    update_counters,
)

LIMIT = 3
WINDOW = 2


def step(counters: Counters, verdict: str, attempt: int = 0):
    return update_counters(
        counters,
        verdict,
        max_consecutive=LIMIT,
        window=WINDOW,
        summary={"attempt": attempt, "hypothesis": f"h{attempt}"},
    )


def two_regressions() -> Counters:
    counters = step(Counters(), Verdict.REGRESSION, 1).counters
    return step(counters, Verdict.REGRESSION, 2).counters


# -- counters -------------------------------------------------------------------


@pytest.mark.parametrize("verdict", [Verdict.FAILED, Verdict.TIE, Verdict.KEEP, Verdict.INCORRECT])
def test_non_regressions_reset_the_streak_and_clear_the_window(verdict: str) -> None:
    before = two_regressions()
    assert before.consecutive_regressions == 2 and len(before.recent_regressions) == 2

    outcome = step(before, verdict, 3)

    assert outcome.counters.consecutive_regressions == 0
    assert outcome.counters.recent_regressions == ()
    assert outcome.counters.attempts == 3
    assert not outcome.stop


def test_regression_increments_and_appends_its_summary() -> None:
    outcome = step(Counters(), Verdict.REGRESSION, 1)

    assert outcome.counters.consecutive_regressions == 1
    assert outcome.counters.recent_regressions == ({"attempt": 1, "hypothesis": "h1"},)
    assert not outcome.stop and outcome.stop_reason is None


def test_window_keeps_only_the_most_recent_summaries() -> None:
    counters = Counters()
    for n in range(1, 3):
        counters = step(counters, Verdict.REGRESSION, n).counters
    outcome = update_counters(
        counters, Verdict.REGRESSION, max_consecutive=10, window=WINDOW, summary={"attempt": 3}
    )

    assert outcome.counters.consecutive_regressions == 3
    assert [r["attempt"] for r in outcome.counters.recent_regressions] == [2, 3]


def test_stop_exactly_at_the_limit_with_a_reason() -> None:
    counters = Counters()
    stops = []
    for n in range(1, LIMIT + 1):
        outcome = step(counters, Verdict.REGRESSION, n)
        counters = outcome.counters
        stops.append(outcome.stop)

    assert stops == [False] * (LIMIT - 1) + [True]
    assert outcome.stop_reason is not None and str(LIMIT) in outcome.stop_reason
    assert "regression" in outcome.stop_reason


@pytest.mark.parametrize("verdict", [Verdict.DIVERGED, Verdict.INTERRUPTED])
def test_diverged_and_interrupted_leave_the_streak(verdict: str) -> None:
    before = two_regressions()

    outcome = step(before, verdict, 3)

    assert outcome.counters.consecutive_regressions == 2
    assert outcome.counters.recent_regressions == before.recent_regressions
    assert outcome.counters.attempts == 3
    assert not outcome.stop


def test_baseline_is_not_counted_as_an_attempt() -> None:
    assert step(Counters(), Verdict.BASELINE).counters.attempts == 0


def test_counters_round_trip_through_json() -> None:
    counters = two_regressions()

    assert Counters.from_json(counters.to_json()) == counters


# -- gain -------------------------------------------------------------------------


def test_gain_is_positive_when_better_for_either_direction() -> None:
    assert gain(110.0, 100.0, "higher") == pytest.approx(0.10)
    assert gain(90.0, 100.0, "higher") == pytest.approx(-0.10)
    assert gain(90.0, 100.0, "lower") == pytest.approx(0.10)
    assert gain(110.0, 100.0, "lower") == pytest.approx(-0.10)


def test_gain_against_a_zero_best_does_not_divide_by_zero() -> None:
    assert gain(0.0, 0.0, "lower") == 0.0
    assert gain(2.0, 0.0, "lower") == pytest.approx(-1.0)
    assert gain(2.0, 0.0, "higher") == pytest.approx(1.0)


@given(st.floats(0.001, 1e6), st.floats(0.001, 1e6), st.sampled_from(["higher", "lower"]))
def test_gain_flips_sign_with_the_direction(candidate: float, best: float, better: str) -> None:
    other = "lower" if better == "higher" else "higher"
    assert gain(candidate, best, better) == pytest.approx(-gain(candidate, best, other))


# -- deterministic targets --------------------------------------------------------


def test_deterministic_small_win_is_kept_because_it_repeats_by_construction() -> None:
    assert assess_deterministic(99.9, 100.0, "lower", 0.01).verdict == Verdict.KEEP


def test_deterministic_small_loss_is_a_tie_and_a_large_one_a_regression() -> None:
    assert assess_deterministic(100.5, 100.0, "lower", 0.01).verdict == Verdict.TIE
    assert assess_deterministic(100.0, 100.0, "lower", 0.01).verdict == Verdict.TIE
    assert assess_deterministic(102.0, 100.0, "lower", 0.01).verdict == Verdict.REGRESSION


# -- paired samples ----------------------------------------------------------------

NOISE = 0.01


def noisy_pairs(
    true_gain: float, n: int, sigma: float, seed: int, better: str = "lower"
) -> list[tuple[float, float]]:
    """(candidate, best) with ``true_gain`` relative improvement and Gaussian noise."""
    rng = random.Random(seed)
    ratio = (1 - true_gain) if better == "lower" else (1 + true_gain)
    return [
        (100.0 * ratio * (1 + rng.gauss(0, sigma)), 100.0 * (1 + rng.gauss(0, sigma)))
        for _ in range(n)
    ]


def first_verdict(pairs: list[tuple[float, float]], **kw: object) -> Assessment:
    """Feed pairs one by one, as the loop does, until the rule decides."""
    for n in range(1, len(pairs) + 1):
        assessment = assess_paired(pairs[:n], "lower", NOISE, **kw)  # type: ignore[arg-type]
        if assessment.verdict is not None:
            return assessment
    return assessment


def test_no_verdict_before_confirm_pairs() -> None:
    pairs = [(50.0, 100.0)] * 3
    assert assess_paired(pairs[:1], "lower", NOISE, confirm=2).verdict is None
    assert assess_paired(pairs[:2], "lower", NOISE, confirm=3).verdict is None
    assert assess_paired([], "lower", NOISE).verdict is None


@pytest.mark.parametrize("better", ["lower", "higher"])
def test_clear_win_is_kept_after_confirm_pairs(better: str) -> None:
    pairs = noisy_pairs(0.20, 24, 0.005, seed=1, better=better)
    result = None
    for n in range(1, 25):
        result = assess_paired(pairs[:n], better, NOISE, confirm=3)
        if result.verdict is not None:
            break
    assert result is not None and result.verdict == Verdict.KEEP
    assert result.samples >= 3
    expected = math.log(1 / 0.8) if better == "lower" else math.log(1.2)
    assert result.gain == pytest.approx(expected, rel=0.05)


def test_clear_regression() -> None:
    result = first_verdict(noisy_pairs(-0.20, 24, 0.005, seed=2))
    assert result.verdict == Verdict.REGRESSION
    assert result.high < 0


def test_equal_samples_are_a_tie() -> None:
    result = first_verdict([(100.0, 100.0)] * 24)
    assert result.verdict == Verdict.TIE
    assert result.samples < 24


def test_small_win_is_kept_only_when_it_repeats() -> None:
    """A 1.5 % win beyond the 1 % noise: kept when every pair shows it, not when
    the first pair's lucky reading is followed by pairs that show nothing."""
    repeating = first_verdict([(98.5, 100.0)] * 24)
    lucky_once = first_verdict([(98.5, 100.0)] + [(100.0, 100.0)] * 23)

    assert repeating.verdict == Verdict.KEEP
    assert lucky_once.verdict == Verdict.TIE


def test_win_inside_the_noise_band_is_a_tie_even_when_it_repeats() -> None:
    result = first_verdict([(99.7, 100.0)] * 24)
    assert result.verdict == Verdict.TIE


def test_undecided_until_max_samples_then_a_tie() -> None:
    # Pairs that disagree wildly never settle; the rule must give up at max_samples.
    swing = [(80.0, 100.0), (125.0, 100.0)] * 4
    verdicts = [
        assess_paired(swing[:n], "lower", NOISE, confirm=2, max_samples=6).verdict
        for n in range(1, 7)
    ]
    assert verdicts[:5] == [None] * 5
    assert verdicts[5] == Verdict.TIE


def test_a_prior_spread_decides_with_fewer_pairs() -> None:
    pairs = [(96.0, 100.0), (95.0, 100.0)]
    without = assess_paired(pairs, "lower", NOISE, confirm=2)
    with_prior = assess_paired(pairs, "lower", NOISE, confirm=2, prior=Spread(1e-5, 40))

    assert without.verdict is None
    assert with_prior.verdict == Verdict.KEEP


@given(st.integers(0, 10_000))
def test_no_keep_when_the_true_gain_is_zero_and_noise_is_small(seed: int) -> None:
    result = first_verdict(noisy_pairs(0.0, 24, 0.003, seed=seed))
    assert result.verdict == Verdict.TIE


# -- config classes ----------------------------------------------------------------


def a(verdict: str | None, g: float = 0.0) -> Assessment:
    return Assessment(verdict, g, g, g, 3)


def test_improve_some_regress_others_is_diverged_naming_the_classes() -> None:
    judged = combine_classes(
        a(Verdict.KEEP, 0.02),
        {
            "n=256": a(Verdict.KEEP, 0.2),
            "n=512": a(Verdict.TIE),
            "n=1024": a(Verdict.REGRESSION, -0.1),
        },
    )
    assert judged is not None
    assert judged.verdict == Verdict.DIVERGED
    assert judged.improved == ("n=256",)
    assert judged.regressed == ("n=1024",)
    assert judged.gains["n=1024"] == pytest.approx(-0.1)


def test_every_class_better_is_a_keep() -> None:
    judged = combine_classes(
        a(Verdict.KEEP, 0.1), {"x": a(Verdict.KEEP, 0.1), "y": a(Verdict.KEEP, 0.1)}
    )
    assert judged is not None and judged.verdict == Verdict.KEEP
    assert judged.improved == ("x", "y") and judged.regressed == ()


def test_one_class_worse_without_any_better_is_a_regression() -> None:
    judged = combine_classes(
        a(Verdict.TIE), {"x": a(Verdict.TIE), "y": a(Verdict.REGRESSION, -0.05)}
    )
    assert judged is not None and judged.verdict == Verdict.REGRESSION


def test_overall_win_with_a_class_regressing_is_never_a_keep() -> None:
    judged = combine_classes(
        a(Verdict.KEEP, 0.05), {"x": a(Verdict.TIE), "y": a(Verdict.REGRESSION, -0.05)}
    )
    assert judged is not None and judged.verdict == Verdict.REGRESSION


def test_named_target_class_decides_the_keep() -> None:
    per_class = {"x": a(Verdict.KEEP, 0.1), "y": a(Verdict.TIE)}
    assert combine_classes(a(Verdict.TIE), per_class, target_class="x").verdict == Verdict.KEEP  # type: ignore[union-attr]
    assert combine_classes(a(Verdict.KEEP), per_class, target_class="y").verdict == Verdict.TIE  # type: ignore[union-attr]


def test_undecided_class_means_no_verdict_yet() -> None:
    assert combine_classes(a(Verdict.KEEP), {"x": a(Verdict.KEEP), "y": a(None)}) is None
    assert combine_classes(a(None), {"x": a(Verdict.KEEP)}) is None


@given(
    st.lists(
        st.sampled_from(
            [
                Verdict.KEEP,
                Verdict.TIE,
                Verdict.REGRESSION,
                Verdict.FAILED,
                Verdict.INCORRECT,
                Verdict.DIVERGED,
                Verdict.INTERRUPTED,
            ]
        ),
        max_size=40,
    ),
    st.integers(1, 6),
    st.integers(1, 4),
)
def test_counters_follow_the_streak_model(verdicts: list[str], limit: int, window: int) -> None:
    """Streak = regressions since the last keep/tie/failed/incorrect; diverged and
    interrupted are transparent; the window holds the streak's last summaries."""
    counters = Counters()
    streak: list[int] = []
    for n, verdict in enumerate(verdicts, start=1):
        outcome = update_counters(
            counters, verdict, max_consecutive=limit, window=window, summary={"attempt": n}
        )
        if verdict == Verdict.REGRESSION:
            streak.append(n)
        elif verdict not in (Verdict.DIVERGED, Verdict.INTERRUPTED):
            streak = []
        counters = outcome.counters
        assert counters.consecutive_regressions == len(streak)
        assert [r["attempt"] for r in counters.recent_regressions] == streak[-window:]
        assert counters.attempts == n
        assert outcome.stop == (verdict == Verdict.REGRESSION and len(streak) >= limit)
