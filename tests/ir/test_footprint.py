"""footprint: on-chip bytes per partition of a knob state (a prior for proposers)."""

from __future__ import annotations

from ir_support import IR_DIR

from kernelopt.ir import Scope, ir_for_workload
from kernelopt.ir.footprint import fits, footprint

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
