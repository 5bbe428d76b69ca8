"""knobs.json: round trip, partial overrides, and errors that name the key."""

from __future__ import annotations

import json
import random

import pytest

from kernelopt.ir import (
    KnobsError,
    Scope,
    ir_from_knobs,
    knob_signature,
    knobs_text,
    knobs_to_json,
    read_knobs,
    sample,
)


@pytest.mark.parametrize("seed", range(5))
def test_round_trip_keeps_knobs_variant_and_signature(lhs_rhs_ir, seed: int) -> None:
    from kernelopt.ir import LoadTranspose

    start = LoadTranspose().apply(lhs_rhs_ir) if seed % 2 else lhs_rhs_ir
    ir = sample(start, random.Random(seed))
    data = json.loads(knobs_text(ir))
    back = ir_from_knobs(lhs_rhs_ir, data)
    assert knobs_to_json(back) == knobs_to_json(ir)
    assert back.variant == ir.variant
    assert knob_signature(back) == knob_signature(ir)


def test_signature_differs_by_variant_and_knob(lhs_rhs_ir) -> None:
    from kernelopt.ir import LoadTranspose

    a = lhs_rhs_ir
    b = a.with_knobs(ltiles_per_block={**a.ltiles_per_block, "d0": 2})
    c = LoadTranspose().apply(a)
    assert len({knob_signature(a), knob_signature(b), knob_signature(c)}) == 3


def test_missing_entries_keep_defaults(matmul_ir) -> None:
    ir = ir_from_knobs(matmul_ir, {"buffer_scopes": {"sbuf_rhs": {"d2": "FULL"}}})
    assert ir.buffer_scopes["sbuf_rhs"] == {"d0": Scope.PER_TILE, "d2": Scope.FULL}
    assert ir.loop_order == matmul_ir.loop_order


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"buffer_scopes": {"sbuf_nope": {"d0": "FULL"}}},
            "buffer_scopes.sbuf_nope: unknown buffer",
        ),
        ({"buffer_scopes": {"sbuf_rhs": {"d9": "FULL"}}}, "buffer_scopes.sbuf_rhs.d9: unknown dim"),
        ({"buffer_scopes": {"sbuf_rhs": {"d0": "WHOLE"}}}, "'WHOLE' is not one of"),
        ({"ltiles_per_block": {"d7": 2}}, "ltiles_per_block.d7: unknown dim"),
        ({"ltiles_per_block": {"d0": "2"}}, "expected an int"),
        ({"variant": "FuseEverything"}, "unknown rewrite 'FuseEverything'"),
        ({"variant": "LoadTranspose"}, "does not apply to this kernel"),
        ({"loop_order": "d0.block"}, "loop_order: expected a list"),
        ({"knobs": {}}, "unknown key"),
    ],
)
def test_names_the_ir_lacks_are_errors(matmul_ir, data: dict, message: str) -> None:
    with pytest.raises(KnobsError, match=message.replace("(", r"\(")):
        ir_from_knobs(matmul_ir, data, source="ir/matmul/knobs.json")


def test_file_errors_name_the_file_and_line(tmp_path, matmul_ir) -> None:
    path = tmp_path / "knobs.json"
    path.write_text('{\n  "loop_order": [,]\n}\n')
    with pytest.raises(KnobsError, match=r"knobs.json: line 2: invalid JSON"):
        read_knobs(path, matmul_ir)
    with pytest.raises(KnobsError, match="cannot read"):
        read_knobs(tmp_path / "absent.json", matmul_ir)


def test_a_rule_breaking_state_loads_for_the_report_to_explain(matmul_ir) -> None:
    from kernelopt.ir import validity_report

    ir = ir_from_knobs(matmul_ir, {"ltiles_per_block": {"d0": 3}})
    assert [f.check for f in validity_report(ir)] == ["ltiles_per_block"]
