"""validity_report: each broken knob state fails one named check whose fix clears it."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_support import SHIPPED, small_ir

from kernelopt.ir import (
    REWRITES,
    KernelIR,
    Scope,
    apply_fix,
    build_ir,
    enumerate_rewrite_combinations,
    validity_report,
)
from kernelopt.ir.model import SCOPES
from kernelopt.ir.ops import NKIMatmul

PT, PB, FULL = Scope.PER_TILE, Scope.PER_BLOCK, Scope.FULL
DEFAULT_ORDER = ["d1.block", "d2.block", "d1.tile", "d2.tile", "d0.block", "d0.tile"]


def _scopes(ir: KernelIR, **changes: dict[str, Scope]) -> dict[str, dict[str, Scope]]:
    return {**ir.buffer_scopes, **changes}


def broken_states(ir: KernelIR) -> dict[str, tuple[KernelIR, str, str]]:
    """name -> (broken KernelIR, expected check, expected buffer) on the small matmul."""
    return {
        "tile before block": (
            ir.with_knobs(
                loop_order=["d1.tile", "d1.block", *DEFAULT_ORDER[1:2], *DEFAULT_ORDER[3:]]
            ),
            "loop_order",
            "loop_order",
        ),
        "missing loop": (ir.with_knobs(loop_order=DEFAULT_ORDER[:-1]), "loop_order", "loop_order"),
        "block size not a divisor": (
            ir.with_knobs(ltiles_per_block={"d0": 3, "d1": 1, "d2": 1}),
            "ltiles_per_block",
            "d0",
        ),
        "scope keys": (
            ir.with_knobs(buffer_scopes=_scopes(ir, sbuf_lhsT={"d0": PT, "d2": FULL})),
            "scope_keys",
            "sbuf_lhsT",
        ),
        "psum per tile on K": (
            ir.with_knobs(buffer_scopes=_scopes(ir, psum_out={"d1": PT, "d2": PT, "d0": PT})),
            "psum_reducing_scope",
            "psum_out",
        ),
        "empty emission interval": (
            ir.with_knobs(buffer_scopes=_scopes(ir, sbuf_lhsT={"d0": PT, "d1": PB})),
            "emission_depth",
            "sbuf_lhsT",
        ),
        "accumulator does not outlive K": (
            ir.with_knobs(
                loop_order=["d0.block", "d1.block", "d2.block", "d1.tile", "d2.tile", "d0.tile"]
            ),
            "accumulator_lifetime",
            "psum_out",
        ),
    }


@pytest.mark.parametrize("case", list(broken_states(small_ir("matmul"))))
def test_fix_hint_applied_clears_the_failure(case: str) -> None:
    broken, check, buffer = broken_states(small_ir("matmul"))[case]
    report = validity_report(broken)
    failure = next((f for f in report if (f.check, f.buffer) == (check, buffer)), None)
    assert failure is not None, [(f.check, f.buffer) for f in report]
    assert failure.fix is not None and failure.fix_hint.startswith("set ")
    fixed = apply_fix(broken, failure.fix)
    assert (check, buffer) not in {(f.check, f.buffer) for f in validity_report(fixed)}


def test_consumer_inside_the_loops_that_complete_its_operand() -> None:
    ir = small_ir("matmul_gelu")
    full = {"d1": FULL, "d2": FULL}
    broken = ir.with_knobs(
        buffer_scopes=_scopes(
            ir, psum_mm={**full, "d0": FULL}, sbuf_mm=full, sbuf_out={"d1": PT, "d2": PT}
        )
    )
    report = validity_report(broken)
    assert [(f.check, f.buffer) for f in report] == [("operand_scope", "sbuf_out")]
    assert "activation_out" in report[0].detail
    fixed = apply_fix(broken, report[0].fix)
    assert validity_report(fixed) == []


def test_every_failure_is_reported_not_just_the_first() -> None:
    ir = small_ir("matmul")
    broken = ir.with_knobs(
        ltiles_per_block={"d0": 3, "d1": 5, "d2": 1},
        buffer_scopes=_scopes(ir, sbuf_rhs={"d0": PT}),
    )
    found = {(f.check, f.buffer) for f in validity_report(broken)}
    assert found == {
        ("ltiles_per_block", "d0"),
        ("ltiles_per_block", "d1"),
        ("scope_keys", "sbuf_rhs"),
    }


def test_matmul_operand_dtypes_must_match() -> None:
    def f(a, b):
        out = NKIMatmul()(stationary=a, moving=b)
        return out

    ir = build_ir(f, {"a": ((128, 128), "bfloat16"), "b": ((128, 512), "float32")})
    report = validity_report(ir)
    assert [(r.check, r.buffer) for r in report] == [("isa_dtype", "matmul_out")]
    assert report[0].fix is None and "INPUT_SPECS" in report[0].fix_hint


@pytest.mark.parametrize("name", SHIPPED)
def test_default_knobs_are_valid(name: str) -> None:
    assert validity_report(small_ir(name)) == []


def _raw_state(ir: KernelIR, rng: random.Random) -> KernelIR:
    """Any knob state at all: orders may put a tile before its block, blocks may not divide."""
    entries = [f"{d.name}.{k}" for d in ir.dims for k in ("block", "tile")]
    rng.shuffle(entries)
    blocks = {d.name: rng.choice([1, 2, 3]) for d in ir.dims}
    scopes = {b.name: {d: rng.choice(SCOPES) for d in b.knob_dims} for b in ir.buffers}
    return ir.with_knobs(entries, blocks, scopes)


@pytest.mark.parametrize("name", SHIPPED)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_reported_failure_comes_with_a_fix_that_clears_it(name: str, seed: int) -> None:
    rng = random.Random(seed)
    variants = [
        v for _, v in enumerate_rewrite_combinations(small_ir(name), list(REWRITES.values()))
    ]
    broken = _raw_state(rng.choice(variants), rng)
    for failure in validity_report(broken):
        assert failure.fix is not None, failure
        json.dumps(failure.fix)  # a patch is plain JSON, like knobs.json
        after = validity_report(apply_fix(broken, failure.fix))
        assert (failure.check, failure.buffer) not in {(f.check, f.buffer) for f in after}
