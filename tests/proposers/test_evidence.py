"""What the NKI proposer learns from a run's measurements: sure and unsure
predictions, states set aside as far worse, and plateaus crossed."""

from __future__ import annotations

import random
from pathlib import Path

from benchmarks_support.drive import drive

from kernelopt.ir import ir_from_knobs, knob_signature, sample
from kernelopt.ir.knobs_io import ir_for_workload
from kernelopt.proposers.evidence import Evidence, exact_tie
from kernelopt.proposers.moves import is_sweep
from kernelopt.proposers.nki import NkiKnobProposer
from kernelopt.proposers.surrogate import Ridge, features

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "ir" / "matmul" / "workload.py"
KNOBS, KERNEL = "ir/matmul/knobs.json", "ir/matmul/kernel.py"


def _split_accumulation(knobs: dict) -> bool:
    """PSUM accumulation split over the contraction dimension: drains every block."""
    return knobs["buffer_scopes"]["psum_out"]["d0"] != "FULL"


def _metric(knobs: dict) -> float:
    """A landscape with one catastrophic setting and an inert knob (d2's block size)."""
    blocks = knobs["ltiles_per_block"]
    value = 10.0 + blocks["d0"] + blocks["d1"]
    return value / 5 if _split_accumulation(knobs) else value


def test_an_unmeasured_feature_keeps_its_prior_uncertainty() -> None:
    seen = [{"a": 1.0}, {"a": 1.0, "b": 1.0}, {"b": 1.0}, {}]
    model = Ridge(seen, [1.0, 3.0, 2.0, 0.0], products=False)
    measured, novel = model.sd([{"a": 1.0}, {"a": 1.0, "c": 1.0}])
    assert measured < novel
    # The mean learns the measured effect and ignores what it never saw.
    assert model.mean([{"a": 1.0, "c": 1.0}])[0] == model.mean([{"a": 1.0}])[0]


def test_a_setting_measured_catastrophic_is_far_worse_and_nothing_near_best_is() -> None:
    base = ir_for_workload(MATMUL)
    rng = random.Random(0)
    evidence = Evidence(features)
    states = [sample(base, rng) for _ in range(40)]
    measured = [(ir, _metric(ir_knobs(ir))) for ir in states[:30]]
    evidence.refit(measured, "higher")
    held_out = states[30:]
    bad = [ir for ir in held_out if _split_accumulation(ir_knobs(ir))]
    good = [ir for ir in held_out if not _split_accumulation(ir_knobs(ir))]
    assert bad and good
    # A split state against a BEST as good as the same state unsplit: far worse.
    assert all(evidence.far_worse(ir, 5 * _metric(ir_knobs(ir))) for ir in bad)
    # Any other state against a BEST 10 % better than itself: not far worse.
    assert not any(evidence.far_worse(ir, 1.1 * _metric(ir_knobs(ir))) for ir in good)
    best = max(m for _, m in measured)
    # Too few measurements: no model, so nothing is called far worse.
    evidence.refit(measured[:2], "higher")
    assert not any(evidence.far_worse(ir, best) for ir in bad)


def ir_knobs(ir) -> dict:
    from kernelopt.ir.knobs_io import knobs_to_json

    return knobs_to_json(ir)


def _run(metric, budget: int, seed: int = 0) -> list[tuple[str, float, str]]:
    """The proposer driven by the runner's deterministic keep/tie/regression rule."""
    # A synthetic landscape: no start screened on the simulator's time.
    proposer = NkiKnobProposer(
        MATMUL, knobs_path=KNOBS, kernel_path=KERNEL, seed=seed, start_pool=0
    )
    steps = drive(proposer, metric, budget, tie=0.005)
    return [(s.candidate.hypothesis, s.value, s.verdict) for s in steps]


def test_a_catastrophic_setting_is_not_measured_again_once_learnt() -> None:
    for seed in (0, 1):
        seen = _run(_metric, 60, seed)
        crashes = [i for i, (_, value, verdict) in enumerate(seen) if verdict == "regression"]
        catastrophic = [i for i, (_, value, _) in enumerate(seen) if value < 10.0]
        # Once the model has a few measurements, the split accumulation is set aside.
        assert len(catastrophic) <= 6, (seed, catastrophic)
        # A minority of regressions. (The search climbs this landscape within about 40
        # candidates; past its top every candidate is a regression or a tie.)
        assert len(crashes) < len(seen) * 2 // 5, (seed, crashes)


def _knob(hypothesis: str) -> str | None:
    """The one knob a sweep candidate moves (None for joint moves and variants)."""
    if not is_sweep(hypothesis) or ";" in hypothesis:
        changes = hypothesis.split("; ")
        names = {c.split("[")[0].split(" ")[0] for c in changes}
        return names.pop() if len(names) == 1 and is_sweep(hypothesis) else None
    return hypothesis.split("[")[0].split(" ")[0]


def test_two_exact_ties_in_a_sweep_cross_the_rest_of_it() -> None:
    # Most buffer scopes do not move this metric: their sweeps are plateaus.
    seen = _run(_metric, 40)
    streak, longest, swept = 0, 0, set()
    for i, (hypothesis, value, verdict) in enumerate(seen):
        knob = _knob(hypothesis)
        previous = _knob(seen[i - 1][0]) if i else None
        flat = verdict == "tie" and value == seen[i - 1][1] and knob is not None
        streak = streak + 1 if flat and knob == previous else (1 if flat else 0)
        longest = max(longest, streak)
        if flat:
            swept.add(knob)
    assert len(swept) >= 3, "too few flat sweeps to say anything"
    assert longest == 2


def test_exact_tie_is_equality_to_the_last_digit() -> None:
    assert exact_tie(87.96685688123854, 87.96685688123854)
    assert not exact_tie(87.9668, 87.96685688123854)
    assert not exact_tie(None, 1.0)


def test_signatures_of_sampled_states_are_distinct_enough_for_the_fixture() -> None:
    base = ir_for_workload(MATMUL)
    rng = random.Random(0)
    sigs = {knob_signature(sample(base, rng)) for _ in range(40)}
    assert len(sigs) > 30
    assert ir_from_knobs(base, ir_knobs(sample(base, rng))) is not None
