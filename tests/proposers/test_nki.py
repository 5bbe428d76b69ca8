"""NkiKnobProposer against the real KernelIR: batches, dedup, sweeps, exhaustion."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from benchmarks_support.drive import drive

from kernelopt.ir import ir_from_knobs, render_ir, validity_report
from kernelopt.ir.cost import engine_times
from kernelopt.proposers.base import Candidate, Observation, ProposerState
from kernelopt.proposers.moves import is_sweep, knobs_of
from kernelopt.proposers.nki import FRUITLESS_ROUND, NkiKnobProposer
from kernelopt.proposers.ranking import bound_of

ROOT = Path(__file__).resolve().parents[2]
LHS_RHS = ROOT / "ir" / "matmul_lhs_rhs" / "workload.py"
KNOBS, KERNEL = "ir/matmul_lhs_rhs/knobs.json", "ir/matmul_lhs_rhs/kernel.py"

TINY = """
import numpy as np

from kernelopt.ir import NKIActivation


def f_nkigym(x):
    out = NKIActivation(op="relu")(data=x)
    return out


def f_numpy(x):
    return np.maximum(x, 0)


INPUT_SPECS = {"x": ((128, 512), "float32")}
"""


def _state(tried: set[str], best: dict | None = None, batch: int = 4) -> ProposerState:
    return ProposerState(
        best_metric=None, best_knobs=best, better="higher", tried=frozenset(tried), batch_size=batch
    )


def _proposer(seed: int = 0) -> NkiKnobProposer:
    # Without a screened start: batch 0 is the floor of every variant.
    return NkiKnobProposer(LHS_RHS, knobs_path=KNOBS, kernel_path=KERNEL, seed=seed, start_pool=0)


def test_first_batch_is_every_variant_at_default_knobs() -> None:
    batch = _proposer().propose(_state(set(), batch=1))
    assert batch is not None
    assert [c.knobs["variant"] for c in batch] == ["base", "LoadTranspose"]
    assert all(c.kind == "knob" and "default knobs" in c.hypothesis for c in batch)
    for c in batch:
        assert set(c.files) == {KNOBS, KERNEL}
        assert json.loads(c.files[KNOBS]) == c.knobs
        ir = ir_from_knobs(LHS_RHS, c.knobs)
        assert c.files[KERNEL] == render_ir(ir)


def test_never_proposes_a_signature_twice_and_follows_the_best() -> None:
    proposer = _proposer(seed=3)
    tried: set[str] = set()
    best = None
    for round_ in range(8):
        batch = proposer.propose(_state(tried, best))
        assert batch
        for c in batch:
            assert c.signature not in tried
            tried.add(c.signature)
            assert validity_report(ir_from_knobs(LHS_RHS, c.knobs)) == []
            assert "\n" not in c.hypothesis and c.hypothesis
        if round_ in (1, 4):
            best = batch[-1].knobs  # the loop kept this one
        verdict = "keep" if round_ in (1, 4) else "regression"
        proposer.observe([Observation(round_, "knob", verdict, None, knobs=batch[-1].knobs)])
    assert len(tried) > 20


def test_sweeps_change_one_knob_around_the_best() -> None:
    proposer = _proposer()
    first = proposer.propose(_state(set()))
    assert first is not None
    best = first[0].knobs
    tried = {c.signature for c in first}
    proposer.observe([Observation(1, "knob", "keep", 1.0, knobs=best)])
    batch = proposer.propose(_state(tried, best, batch=5))
    assert batch is not None and len(batch) == 5
    assert all(is_sweep(c.hypothesis) for c in batch)
    # A knob is swept at a time, the settings that leave the busiest engine least work
    # first; the first knob swept is one whose setting lowers that work.
    knob = batch[0].hypothesis.split("[")[0].split(" ")[0]
    swept = [c for c in batch if c.hypothesis.split("[")[0].split(" ")[0] == knob]
    assert batch[: len(swept)] == swept
    bounds = [bound_of(ir_from_knobs(LHS_RHS, c.knobs)) for c in swept]
    assert bounds == sorted(bounds) and bounds[0] < bound_of(ir_from_knobs(LHS_RHS, best))
    assert len({c.signature for c in batch}) == 5


def test_a_tiny_space_is_exhausted_then_none(tmp_path: Path) -> None:
    workload = tmp_path / "workload.py"
    workload.write_text(TINY)
    proposer = NkiKnobProposer(
        workload, knobs_path="k.json", kernel_path="k.py", seed=1, start_pool=0
    )
    tried: set[str] = set()
    best = None
    for _ in range(400):
        batch = proposer.propose(_state(tried, best, batch=16))
        if batch is None:
            break
        for c in batch:
            assert c.signature not in tried
            tried.add(c.signature)
        best = batch[0].knobs
    else:
        raise AssertionError("the proposer never reported the space exhausted")
    # Exhausted means every valid state was proposed: count them independently.
    assert len(tried) == _count_valid(workload)
    assert proposer.propose(_state(tried, best)) is None


def _count_valid(workload: Path) -> int:
    import itertools

    from kernelopt.ir.derive import derive
    from kernelopt.ir.knobs_io import ir_for_workload
    from kernelopt.ir.model import SCOPES

    ir = ir_for_workload(workload)
    entries = [f"{d.name}.{k}" for d in ir.dims for k in ("block", "tile")]
    count = 0
    for order in itertools.permutations(entries):
        for scopes in itertools.product(SCOPES, repeat=4):
            state = ir.with_knobs(
                order,
                None,
                {
                    "sbuf_x": dict(zip(("d0", "d1"), scopes[:2], strict=True)),
                    "sbuf_out": dict(zip(("d0", "d1"), scopes[2:], strict=True)),
                },
            )
            count += not derive(state)[1]
    return count


def _family(hypothesis: str) -> str:
    return hypothesis.split(" ")[0].split("[")[0]


def test_a_win_repeats_the_sweep_and_a_loss_moves_to_another_knob() -> None:
    proposer = _proposer(seed=2)
    first = proposer.propose(_state(set()))
    assert first is not None
    tried = {c.signature for c in first}
    best = first[0].knobs
    proposer.observe([Observation(1, "knob", "keep", 1.0, knobs=best)])
    a = proposer.propose(_state(tried, best, batch=3))  # part of a sweep of up to 8
    assert a is not None
    tried |= {c.signature for c in a}
    proposer.observe([Observation(2, "knob", "keep", 2.0, knobs=a[0].knobs)])
    # A new best re-centres the sweep (the rest of the old one is dropped): same knob.
    b = proposer.propose(_state(tried, a[0].knobs, batch=8))
    assert b is not None and _family(b[0].hypothesis) == _family(a[0].hypothesis)
    tried |= {c.signature for c in b}
    proposer.observe([Observation(3, "knob", "regression", 0.5, knobs=b[0].knobs)])
    c = proposer.propose(_state(tried, a[0].knobs, batch=3))
    assert c is not None and _family(c[0].hypothesis) != _family(a[0].hypothesis)


def test_draws_and_sweeps_prefer_states_that_fit_on_chip() -> None:
    from kernelopt.ir.footprint import fits

    proposer = NkiKnobProposer(ROOT / "ir" / "matmul" / "workload.py", seed=5, start_pool=0)
    tried: set[str] = set()
    best = None
    for _ in range(4):
        batch = proposer.propose(_state(tried, best, batch=8))
        assert batch is not None
        for c in batch:
            tried.add(c.signature)
            assert fits(ir_from_knobs(ROOT / "ir" / "matmul" / "workload.py", c.knobs))
        best = batch[-1].knobs


# --- the search after sweeps: perturbations, restarts, the surrogate, the profile ---------


def _families(best: dict, cand: dict) -> set[str]:
    """Which knobs a candidate changes relative to ``best`` (variant counts as one)."""
    if cand["variant"] != best["variant"]:
        return {"variant"}
    changed = {"loop_order"} if cand["loop_order"] != best["loop_order"] else set()
    changed |= {
        f"ltiles_per_block.{d}"
        for d, n in cand["ltiles_per_block"].items()
        if best["ltiles_per_block"].get(d) != n
    }
    changed |= {
        f"buffer_scopes.{b}"
        for b, s in cand["buffer_scopes"].items()
        if best["buffer_scopes"].get(b) != s
    }
    return changed


def _drive(
    proposer: NkiKnobProposer,
    metric: Callable[[dict], float],
    budget: int,
    profile: Callable[[dict], dict] | None = None,
    until: float | None = None,
) -> list[tuple[Candidate, dict | None]]:
    """The runner's keep rule on a deterministic metric; returns (candidate, best) pairs.

    With ``until``, the run ends once a candidate reaches that metric (a target)."""
    steps = drive(proposer, metric, budget, batch_size=4, profile=profile, until=until)
    return [(s.candidate, s.best_knobs) for s in steps]


def test_after_a_fruitless_sweep_round_it_moves_several_knobs_at_once() -> None:
    proposer = _proposer(seed=4)
    first_best: dict = {}

    def metric(knobs: dict) -> float:
        # The first state measured stays best: every sweep around it is fruitless.
        if not first_best:
            first_best.update(knobs)
        return 1.0 if knobs == first_best else 0.0

    seen = _drive(proposer, metric, 160)
    after_floor = seen[len(proposer.variants) :]  # batch 0 is one state per variant
    changes = [_families(best, c.knobs) for c, best in after_floor]
    # A loop-order sweep may repair scopes on the way; any other sweep moves one knob.
    # A block move (coarsen, blocking) changes one block size and the scopes that follow it.
    blocks = [{g for g in f if g.startswith("ltiles_per_block.")} for f in changes]
    moves = [
        1 if "loop_order" in f or (len(b) == 1 and f - b <= scoped(f)) else len(f)
        for f, b in zip(changes, blocks, strict=True)
    ]
    single = [f for f, n in zip(changes, moves, strict=True) if n == 1 and "variant" not in f]
    joint = [
        i for i, (f, n) in enumerate(zip(changes, moves, strict=True)) if "variant" in f or n >= 2
    ]
    assert joint, "no joint or perturbed state after the sweeps ran out"
    # A round of sweeps (every knob with a new kernel to offer, at most FRUITLESS_ROUND
    # of them) came before the first multi-knob state; a block move sweeps its dim's block.
    before = zip(changes[: joint[0]], moves[: joint[0]], strict=True)
    swept = set().union(*(f for f, n in before if n == 1))
    knobs = knobs_of(ir_from_knobs(LHS_RHS, first_best))
    assert len(swept) >= min(len(knobs), FRUITLESS_ROUND)
    assert len(single) >= min(len(knobs), FRUITLESS_ROUND)


def scoped(families: set[str]) -> set[str]:
    return {f for f in families if f.startswith("buffer_scopes.")}


def test_a_long_run_never_repeats_a_signature_or_a_kernel() -> None:
    proposer = _proposer(seed=6)
    seen = _drive(proposer, lambda k: float(sum(k["ltiles_per_block"].values())), 150)
    assert len(seen) == 150
    kernels = [c.files[KERNEL] for c, _ in seen]
    assert len(set(kernels)) == len(kernels), "the same kernel was proposed under other knobs"


def test_the_search_finds_an_optimum_that_needs_three_knobs_together() -> None:
    # A landscape the sweeps alone cannot climb: the metric rewards three knobs only
    # in combination, and is flat (ties) elsewhere.
    def metric(knobs: dict) -> float:
        blocks = knobs["ltiles_per_block"]
        scopes = knobs["buffer_scopes"]
        score = float(blocks["d0"] >= 4) + float(blocks["d2"] >= 2)
        score += float(scopes["sbuf_rhs"].get("d1") == "FULL")
        return score + (3.0 if score == 3.0 else 0.0)

    for seed in (0, 1):
        seen = _drive(_proposer(seed=seed), metric, 150, until=6.0)
        assert max(metric(c.knobs) for c, _ in seen) == 6.0, f"seed {seed} missed the optimum"


def test_the_first_sweep_cuts_the_work_of_the_engine_the_profile_says_binds() -> None:
    def first_sweep(profile: dict) -> tuple[dict, list]:
        proposer = _proposer()
        first = proposer.propose(_state(set()))
        assert first is not None
        best = first[0].knobs
        tried = {c.signature for c in first}
        obs = Observation(1, "knob", "keep", 1.0, best, first[0].signature, profile)
        proposer.observe([obs])
        state = ProposerState(
            best_metric=1.0,
            best_knobs=best,
            better="higher",
            history=(obs,),
            tried=frozenset(tried),
            batch_size=2,
        )
        batch = proposer.propose(state)
        assert batch is not None
        return best, batch

    def work(knobs: dict, engine: str) -> float:
        return getattr(engine_times(ir_from_knobs(LHS_RHS, knobs)), engine)

    # DMA-bound: the first setting moves less over DMA (here: rhs loaded once, not per row).
    best, batch = first_sweep(
        {"dma_active_time_percent": 99.0, "tensor_engine_active_time_percent": 40.0}
    )
    assert work(batch[0].knobs, "dma") < work(best, "dma")
    # TensorE-bound, and no setting does less TensorE work: the profile's order, loop order first.
    best, batch = first_sweep(
        {"dma_active_time_percent": 30.0, "tensor_engine_active_time_percent": 90.0}
    )
    assert all(work(c.knobs, "tensor") >= work(best, "tensor") for c in batch)
    assert "loop_order" in _families(best, batch[0].knobs)


def test_the_surrogate_ranks_unseen_states_by_a_metric_with_interacting_knobs() -> None:
    import math
    import random

    import numpy as np

    from kernelopt.ir import KernelIR, ir_for_workload, sample
    from kernelopt.proposers.surrogate import features, fit

    base = ir_for_workload(LHS_RHS)
    rng = random.Random(11)
    states = [sample(base, rng) for _ in range(120)]

    def metric(ir: KernelIR) -> float:
        wide = ir.buffer_scopes["sbuf_rhs"]["d1"] == "FULL"
        # Block size pays off only with the wide buffer: a product term.
        return math.log2(ir.ltiles_per_block["d0"]) * (2.0 if wide else 0.5)

    truth = np.array([metric(ir) for ir in states])
    seen, unseen = [features(ir) for ir in states[:90]], [features(ir) for ir in states[90:]]
    guess = fit(seen, list(truth[:90]))(unseen)
    assert np.corrcoef(guess, truth[90:])[0, 1] > 0.7
    # The same model fitted to shuffled metrics has nothing to learn from.
    noise = list(np.random.default_rng(0).permutation(truth[:90]))
    blind = fit(seen, noise)(unseen)
    assert np.corrcoef(blind, truth[90:])[0, 1] < 0.4


def test_on_sim_a_state_counted_slower_than_best_waits() -> None:
    def second_batch(profile: dict) -> list[float]:
        proposer = _proposer()
        first = proposer.propose(_state(set()))
        assert first is not None
        obs = Observation(1, "knob", "keep", 1.0, first[0].knobs, first[0].signature, profile)
        proposer.observe([obs])
        state = ProposerState(
            best_metric=1.0,
            best_knobs=first[0].knobs,
            better="higher",
            history=(obs,),
            tried=frozenset(c.signature for c in first),
            batch_size=6,
        )
        batch = proposer.propose(state)
        assert batch is not None
        return [engine_times(ir_from_knobs(LHS_RHS, c.knobs)).bound for c in batch]

    # Without a measured time, the sweep around BEST proposes states of every floor.
    free = sorted(second_batch({}))
    cut = max(f for f in free if f * 1.02 < free[-1])  # some above it, some below
    # BEST measured on sim at that time: nothing counted slower (by 2 %) is proposed.
    pruned = second_batch({"device": "sim", "total_time": cut * 1e-9})
    assert pruned and max(pruned) < cut * 1.02
    # On a device the model is only an estimate: only states counted far slower wait.
    device = second_batch({"device": "neuron", "total_time": cut * 1e-9})
    assert max(device) >= cut * 1.02
