"""How often the decision rule keeps a no-op or misses a real gain, under noise.

A simulated target with a known true gain and 2 % multiplicative noise (and a
drifting variant whose level wanders between samples) is judged by the real
decision code (`kernelopt.decide.assess_paired`, the same function the runner
uses), and by the plain single-sample threshold rule for comparison:
false-keep rate at a true gain of 0, miss rate at +3 %, 1,000 decisions each.

    python benchmarks/noise.py [--decisions 1000] [--seed 0]

Goal: false keeps <= 1 %, misses <= 5 %.
"""

from __future__ import annotations

import argparse
import random

from kernelopt.decide import Spread, Verdict, assess_paired, log_gain, spread_of

NOISE_THRESHOLD = 0.01  # the program's decide.noise
CONFIRM = 2
MAX_SAMPLES = 24


class Target:
    """Time of a kernel (lower is better) with multiplicative noise and optional drift."""

    def __init__(self, rng: random.Random, sigma: float, drift: float):
        self.rng = rng
        self.sigma = sigma
        self.drift = drift
        self.level = 1.0

    def measure(self, true_time: float) -> float:
        if self.drift:
            # A slow random walk of the machine's speed (thermal, neighbours).
            self.level *= 1.0 + self.rng.gauss(0.0, self.drift)
        return true_time * self.level * (1.0 + self.rng.gauss(0.0, self.sigma))


def kernelopt_rule(target: Target, true_gain: float, prior: Spread) -> tuple[bool, int, Spread]:
    """One decision as the runner makes it; returns the run's pooled spread after it."""
    best_true, cand_true = 100.0, 100.0 / (1.0 + true_gain)
    pairs: list[tuple[float, float]] = []
    while True:
        c = target.measure(cand_true)
        b = target.measure(best_true)
        pairs.append((c, b))
        result = assess_paired(pairs, "lower", NOISE_THRESHOLD, CONFIRM, MAX_SAMPLES, prior)
        if result.verdict is not None:
            gains = [log_gain(c, b, "lower") for c, b in pairs]
            return result.verdict == Verdict.KEEP, 2 * len(pairs), prior.pooled(spread_of(gains))


def single_sample_rule(target: Target, true_gain: float, stale_best: float) -> tuple[bool, int]:
    """The seed's rule taken literally: one candidate sample vs the recorded best."""
    cand = target.measure(100.0 / (1.0 + true_gain))
    return (stale_best - cand) / stale_best > NOISE_THRESHOLD, 1


def run(decisions: int, seed: int, sigma: float, drift: float) -> dict[str, float]:
    rng = random.Random(seed)
    out: dict[str, float] = {}
    for name, true_gain in (("false_keep", 0.0), ("miss", 0.03)):
        target = Target(rng, sigma, drift)
        kept = runs = 0
        prior = Spread()  # a fresh run: nothing pooled yet
        for _ in range(decisions):
            ok, n, prior = kernelopt_rule(target, true_gain, prior)
            kept += ok
            runs += n
        plain_target = Target(rng, sigma, drift)
        plain_kept = 0
        for _ in range(decisions):
            # The recorded best is itself one noisy sample from when it was kept.
            stale_best = plain_target.measure(100.0)
            ok, _ = single_sample_rule(plain_target, true_gain, stale_best)
            plain_kept += ok
        rate = kept / decisions
        plain_rate = plain_kept / decisions
        if name == "miss":
            rate, plain_rate = 1 - rate, 1 - plain_rate
        out[name] = rate
        out[f"plain_{name}"] = plain_rate
        out[f"runs_{name}"] = runs / decisions
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"noise threshold {NOISE_THRESHOLD:.0%}, confirm {CONFIRM}, max samples {MAX_SAMPLES}, "
        f"{args.decisions} decisions per cell"
    )
    print(f"{'target':<22}{'rule':<14}{'false keeps':>12}{'misses (+3%)':>14}{'runs/decision':>15}")
    for label, sigma, drift in (("2% noise", 0.02, 0.0), ("2% noise + drift", 0.02, 0.01)):
        r = run(args.decisions, args.seed, sigma, drift)
        runs = (r["runs_false_keep"] + r["runs_miss"]) / 2
        print(
            f"{label:<22}{'kernelopt':<14}{r['false_keep']:>11.1%}{r['miss']:>14.1%}{runs:>15.1f}"
        )
        print(
            f"{'':<22}{'single-sample':<14}{r['plain_false_keep']:>11.1%}{r['plain_miss']:>14.1%}{1:>15.1f}"
        )
    print("goal: kernelopt false keeps <= 1.0%, misses <= 5.0%")


if __name__ == "__main__":
    main()
