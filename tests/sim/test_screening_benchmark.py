"""benchmarks/screening.py and live_refit.py at a small size: both searches, the
calibration figures and a timed refit run."""

from __future__ import annotations

from pathlib import Path

from benchmarks_support.modules import load_module

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = ROOT / "tests" / "neuron" / "kernels" / "workload.py"


def _bench_module(name: str = "screening"):
    return load_module(f"{name}_bench", ROOT / "benchmarks" / f"{name}.py")


def test_screened_and_plain_searches_measure_within_budget_and_calibration_helps() -> None:
    bench_mod = _bench_module()
    bench = bench_mod.Bench(WORKLOAD, noise_pp=0.0)
    plain = bench_mod.search(bench, 0, 8, None)
    screened = bench_mod.search(bench, 0, 8, (6, 1, 4))
    assert len(plain) == 8 and 1 <= len(screened) <= 8
    target = max(t for _, t, _ in plain + screened if t is not None)
    assert bench_mod.reached(plain, target) or bench_mod.reached(screened, target)
    # The device times kernels with its own mechanisms, so the model starts off it.
    # This small kernel is bound by fixed costs (launch, DMA latency) that the
    # fitted DMA parameters can absorb: here the fit narrows the gap. (On large
    # kernels the device's structure differs and it need not: docs/screening.md.)
    errors = bench_mod.calibration_errors(bench, plain, bench_mod.held_out(bench, 6))
    assert errors[0] > 0.5 and min(errors[10], errors[20]) < errors[0] / 2


def test_a_timed_live_refit_on_a_few_pairs_narrows_the_gap() -> None:
    (row,) = _bench_module("live_refit").timed_refits(WORKLOAD, [5])
    assert row["pairs"] == 5 and row["seconds"] > 0
    assert row["error_after"] < row["error_before"]


def test_the_agreement_benchmark_compares_model_and_device_per_kernel() -> None:
    agreement = _bench_module("fake_device_agreement")
    kernels = ROOT / "tests" / "neuron" / "kernels"
    rows = agreement.compare(
        [
            ("small", kernels / "kernel.py", WORKLOAD, (), None),
            ("broken", kernels / "missing.py", WORKLOAD, (), None),
        ]
    )
    small, broken = rows
    assert small["diff"] == small["model"] - small["device"] and abs(small["diff"]) > 0.1
    assert "error" in broken
    figures = agreement.summary(
        [
            {"kernel": f"ir/{i}", "model": m, "device": d, "diff": m - d, "public": None}
            for i, (m, d) in enumerate([(10, 12), (20, 18), (30, 35), (60, 70)])
        ]
    )
    assert figures["spearman"] == 1.0 and figures["mean_abs_pp"] == 4.75
    assert figures["mid_range_kernels"] == 1 and figures["mid_range_mean_diff_pp"] == -10.0
    assert figures["ir_states"]["kernels"] == 4


def test_the_scoreboard_gap_is_one_host_cost_per_family_and_its_spread_the_error() -> None:
    agreement = _bench_module("fake_device_agreement")
    rows = [
        {"family": "a", "model_ms": m, "device_ms": d, "public_ms": p}
        for m, d, p in [(0.01, 0.02, 0.06), (1.0, 1.1, 1.14), (2.0, 2.3, 2.34)]
    ]
    gaps = agreement.host_gaps(rows)["a"]
    # The device's gap is 40 us at every shape: a constant host cost, no spread.
    assert abs(gaps["device_gap_us_median"] - 40.0) < 1e-6 and gaps["device_gap_us_sd"] < 1e-6
    assert abs(gaps["model_gap_us_median"] - 140.0) < 1e-6 and gaps["model_gap_us_sd"] > 100.0
