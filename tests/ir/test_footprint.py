"""footprint: on-chip bytes per partition of a knob state (a prior for proposers)."""

from __future__ import annotations

import dataclasses
import random

from ir_support import IR_DIR

from kernelopt.ir import Scope, ir_for_workload, knob_signature, sample
from kernelopt.ir.footprint import fits, footprint, shrink_to_fit
from kernelopt.ir.sample import sample_fitting
from kernelopt.ir.validate import is_valid
from kernelopt.sim.trn2 import DEFAULT_PARAMS

ORDER = (Scope.PER_TILE, Scope.PER_BLOCK, Scope.FULL)

FULL = Scope.FULL


def test_default_small_matmul_counts_each_buffer_once(matmul_ir) -> None:
    # lhsT 128 bf16 + rhs 512 bf16 + out 512 bf16 in SBUF; one 2 KiB PSUM bank.
    assert footprint(matmul_ir) == {"sbuf": 256 + 1024 + 1024, "psum": 2048}


def test_psum_rounds_up_to_banks_and_full_scopes_scale_with_tiles() -> None:
    ir = ir_for_workload(IR_DIR / "matmul" / "workload.py")
    assert fits(ir)
    wide = ir.with_knobs(
        loop_order=["d1.block", "d2.block", "d0.block", "d1.tile", "d2.tile", "d0.tile"],
        buffer_scopes={**ir.buffer_scopes, "psum_out": {"d1": FULL, "d2": FULL, "d0": FULL}},
    )
    # 16 x 2048 fp32 per partition: 128 KiB of PSUM, eight times what exists.
    assert footprint(wide)["psum"] == 16 * 2048 * 4
    assert not fits(wide)


def test_shrink_to_fit_narrows_an_oversized_state_to_a_valid_one_that_fits() -> None:
    # At full size most joint draws of a matmul ask for more than SBUF or PSUM holds.
    ir = ir_for_workload(IR_DIR / "matmul" / "workload.py")
    rng = random.Random(3)
    oversized = [s for s in (sample(ir, rng) for _ in range(60)) if not fits(s)]
    assert len(oversized) >= 10
    shrunk_states = [(s, shrink_to_fit(s)) for s in oversized]
    # A loop order that keeps the contraction outermost pins the whole output in PSUM:
    # no scope alone fixes that, and the draw is given up.
    assert sum(shrunk is not None for _, shrunk in shrunk_states) >= len(oversized) // 4
    for state, shrunk in shrunk_states:
        if shrunk is None:
            continue
        assert fits(shrunk) and is_valid(shrunk)
        # The draw's loop order and blocking are kept; only scopes narrow.
        assert shrunk.loop_order == state.loop_order
        assert shrunk.ltiles_per_block == state.ltiles_per_block
        for buf in ir.buffers:
            for d, scope in shrunk.buffer_scopes[buf.name].items():
                before = state.buffer_scopes[buf.name][d]
                assert ORDER.index(scope) <= ORDER.index(before), (buf.name, d)


def test_shrink_to_fit_leaves_a_fitting_state_alone_and_gives_up_on_none() -> None:
    ir = ir_for_workload(IR_DIR / "matmul" / "workload.py")
    assert shrink_to_fit(ir) is ir
    # One tile of everything still asks for more than this much SBUF: nothing fits.
    tiny = dataclasses.replace(DEFAULT_PARAMS, sbuf_partition_bytes=1024)
    assert shrink_to_fit(ir, tiny) is None


def test_a_draw_that_does_not_fit_is_narrowed_rather_than_redrawn() -> None:
    ir = ir_for_workload(IR_DIR / "matmul" / "workload.py")
    for seed in range(40):
        drawn = sample(ir, random.Random(seed))
        shrunk = shrink_to_fit(drawn)
        if not fits(drawn) and shrunk is not None:
            break
    else:
        raise AssertionError("no oversized draw that narrows in 40 seeds")
    # The same seed: sample_fitting keeps the draw's loop order and blocks.
    assert knob_signature(sample_fitting(ir, random.Random(seed))) == knob_signature(shrunk)
