"""Where a search starts: streaming templates, the screened pool, and its ranking on sim."""

from __future__ import annotations

import gc
import random
import time

from ir_support import small_ir, small_workload

from kernelopt.ir import REWRITES, enumerate_rewrite_combinations, knob_signature
from kernelopt.ir.cost import engine_times
from kernelopt.ir.derive import derive
from kernelopt.ir.footprint import fits
from kernelopt.ir.model import Scope
from kernelopt.ir.start import SimTimer, pool, ranked, templates, twins


def _variants(name: str):
    return [v for _, v in enumerate_rewrite_combinations(small_ir(name), list(REWRITES.values()))]


def test_templates_stream_one_parallel_dim_and_hold_the_rest() -> None:
    for name in ("rmsnorm_matmul", "softmax", "swiglu"):
        for variant in _variants(name):
            found = templates(variant)
            assert found, (name, variant.variant)
            for state in found:
                assert not derive(state)[1] and fits(state) and state.variant == variant.variant
                if _blocked_walk(state):
                    continue  # the blocked-GEMM template: below
                outer = state.loop_order[0].split(".")[0]
                assert state.loop_order[1] == f"{outer}.tile"  # its tiles walked one by one
                assert not state.dim[outer].reducing and state.ltiles_per_block[outer] == 1
    # A row-streamed softmax holds one row tile in each buffer and whole rows.
    soft = templates(small_ir("softmax"))
    rows = next(s for s in soft if s.loop_order[0] == "d0.block")
    assert rows.buffer_scopes["sbuf_x"]["d0"] == Scope.PER_TILE


def _blocked_walk(state) -> bool:
    """Every parallel dim's block loop outermost, then their tile loops."""
    parallel = [d.name for d in state.dims if not d.reducing]
    head = [f"{d}.block" for d in parallel] + [f"{d}.tile" for d in parallel]
    return sorted(state.loop_order[: len(head)]) == sorted(head) and all(
        e.endswith(".block") for e in state.loop_order[: len(parallel)]
    )


def test_a_template_walks_the_output_in_blocks_of_two_tiles() -> None:
    # The matmul's output (2 x 2 tiles at this size) walked as one blocked GEMM does.
    for name in ("matmul", "rmsnorm_matmul"):
        found = [s for v in _variants(name) for s in templates(v) if _blocked_walk(s)]
        assert found, name
        for state in found:
            for d in state.dims:
                want = d.num_tiles if d.reducing else (2 if d.num_tiles % 2 == 0 else 1)
                assert state.ltiles_per_block[d.name] == want, (name, d.name)


def test_the_pool_is_defaults_templates_and_lean_draws_once_each() -> None:
    variants = _variants("rmsnorm_matmul")
    states = pool(variants, random.Random(3), 8)
    signatures = [knob_signature(s) for s in states]
    assert len(signatures) == len(set(signatures))
    assert all(knob_signature(v) in signatures for v in variants if not derive(v)[1])
    assert all(not derive(s)[1] for s in states)
    # The lean half of the draws does less work on its busiest engine than the rest.
    shaped = {knob_signature(t) for v in variants for t in (v, *templates(v))}
    drawn, paired = [], set()
    for s in states:  # each pick comes before its twins (twins())
        if knob_signature(s) in shaped or knob_signature(s) in paired:
            continue
        drawn.append(s)
        paired |= {knob_signature(t) for t in twins(s, variants)}
    bounds = [engine_times(s).bound for s in drawn]
    assert len(drawn) == 8 // 2 + 8 // 4 and max(bounds[:4]) <= min(bounds[4:])


def test_the_pool_is_seeded() -> None:
    variants = _variants("softmax")
    first = [knob_signature(s) for s in pool(variants, random.Random(3), 8)]
    assert [knob_signature(s) for s in pool(variants, random.Random(3), 8)] == first
    assert [knob_signature(s) for s in pool(variants, random.Random(4), 8)] != first


def test_ranked_orders_by_simulated_time_and_drops_what_cannot_run() -> None:
    workload = small_workload("softmax")
    timer = SimTimer(workload)
    states = pool(_variants("softmax"), random.Random(0), 6)
    starts = ranked(states, timer)
    assert starts and [s.seconds for s in starts] == sorted(s.seconds for s in starts)
    assert all(s.seconds == timer(s.ir) for s in starts)
    refused = ranked(states, lambda ir: None)
    assert refused == []


def test_past_its_deadline_the_screen_times_only_the_leanest_counted_state() -> None:
    states = pool(_variants("rmsnorm_matmul"), random.Random(0), 6)
    timed: list = []

    def timer(ir):
        timed.append(ir)
        return 1e-6 * len(timed)

    # Before the deadline every state is timed; past it, only the one counted leanest.
    assert len(ranked(states, timer, time.monotonic() + 3600)) == len(states)
    timed.clear()
    starts = ranked(states, timer, time.monotonic() - 1)
    leanest = min(engine_times(s).bound for s in states)
    assert len(timed) == 1 and engine_times(timed[0]).bound == leanest
    assert [s.ir for s in starts] == timed
    # A state the simulator refuses does not end the screen: it goes on until one runs.
    asked: list = []

    def refuses_three(ir):
        asked.append(ir)
        return None if len(asked) <= 3 else 1e-6

    starts = ranked(states, refuses_three, time.monotonic() - 1)
    assert len(asked) == 4 and [s.ir for s in starts] == [asked[-1]]


def test_a_drawn_state_is_screened_on_its_twin_variant_too() -> None:
    variants = _variants("rmsnorm_matmul")  # its squares' row sum may be fused
    states = pool(variants, random.Random(0), 8)
    signatures = {knob_signature(x) for x in states}
    drawn = [s for s in states if s.variant == "base"]
    assert len(drawn) > 2
    fused = next(v for v in variants if v.variant == "ActivationReduce")
    paired = carried = 0
    for s in drawn:
        found = twins(s, variants)
        assert all(t.variant != "base" for t in found)
        assert len({t.variant for t in found}) == len(found)  # one twin per variant
        same = fused.with_knobs(s.loop_order, s.ltiles_per_block, s.buffer_scopes)
        twin = next((t for t in found if t.variant == "ActivationReduce"), None)
        # The fused variant has the same buffers: it takes the knobs as they are, where
        # the fused row is one instruction (else derive refuses it).
        assert (twin is not None) == (not derive(same)[1] and fits(same))
        if twin is not None:
            assert twin.buffer_scopes == s.buffer_scopes and twin.loop_order == s.loop_order
            paired += knob_signature(twin) in signatures  # a draw's twin is in the pool
        # LoadTranspose drops the transpose's buffers: it keeps the loop order, the
        # blocking and the scopes of the buffers both have, unless those are invalid there.
        for t in found:
            if t.variant != "LoadTranspose":
                continue
            shared = set(t.buffer_scopes) & set(s.buffer_scopes)
            assert shared and set(t.buffer_scopes) != set(s.buffer_scopes)
            if t.loop_order == s.loop_order and t.ltiles_per_block == s.ltiles_per_block:
                carried += all(t.buffer_scopes[b] == s.buffer_scopes[b] for b in shared)
    assert paired >= 2 and carried >= 1


def test_the_first_batch_weighs_the_leaders_knobs_on_every_variant(monkeypatch) -> None:
    """The screened leaders' knobs are timed on the other variants too, and such a twin
    is measured first when it is the fastest estimate."""
    from kernelopt.proposers import first

    variants = _variants("rmsnorm_matmul")
    timed: list = []

    def timer(ir):
        timed.append(ir)
        return 2e-6 if ir.variant == "base" else 1e-6

    # A pool of the base variant's defaults alone: any other variant comes from its twins.
    monkeypatch.setattr(first, "pool", lambda variants, rng, size, drawing=None: [variants[0]])
    picks = first.first_batch(variants, timer, random.Random(0), 8, lambda ir: True)
    assert timed[0] is variants[0]
    twinned = timed[1:]
    assert "LoadTranspose" in {t.variant for t in twinned}
    for t in twinned:
        assert (
            t.loop_order == variants[0].loop_order
            or derive(t.with_knobs(loop_order=variants[0].loop_order))[1]
        )
    assert picks and picks[0].ir.variant != "base" and picks[0].ir in twinned


def test_the_timer_leaves_no_scratch_directory_behind() -> None:
    timer = SimTimer(small_workload("softmax"))
    timer(small_ir("softmax"))
    scratch = timer.dir
    assert (scratch / "kernel.py").exists()
    del timer
    gc.collect()
    assert not scratch.exists()


def test_the_screen_reports_each_state_it_times() -> None:
    states = pool(_variants("softmax"), random.Random(0), 4)
    heard: list[tuple[int, int]] = []
    ranked(states, lambda ir: 1e-6, None, lambda done, total: heard.append((done, total)))
    assert heard == [(i, len(states)) for i in range(len(states) + 1)]
