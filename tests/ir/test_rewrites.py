"""LoadTranspose and enumerate_rewrite_combinations."""

from __future__ import annotations

from ir_support import small_ir

from kernelopt.ir import LoadTranspose, enumerate_rewrite_combinations, render_ir, validity_report


def test_load_transpose_replaces_the_tensor_engine_transpose(lhs_rhs_ir) -> None:
    rewritten = LoadTranspose().apply(lhs_rhs_ir)
    assert rewritten.variant == "LoadTranspose"
    gone = {"sbuf_lhs", "psum_lhs_T"}
    assert gone <= set(lhs_rhs_ir.buffer) and not gone & set(rewritten.buffer)
    assert rewritten.buffer["sbuf_lhs_T"].role == "load"
    kinds = [op.kind for op in rewritten.operators]
    assert kinds == ["load_transpose", "load", "matmul", "drain", "store"]
    assert validity_report(rewritten) == []
    text = render_ir(rewritten)
    assert "nisa.dma_transpose(" in text and "nc_transpose" not in text


def test_load_transpose_leaves_an_ir_without_the_pattern_unchanged(matmul_ir) -> None:
    assert LoadTranspose().apply(matmul_ir) is matmul_ir


def test_a_transpose_of_a_computed_value_is_not_a_load_transpose() -> None:
    from kernelopt.ir import NKIActivation, NKIMatmul, NKITranspose, build_ir

    def f(a, b):
        r = NKIActivation(op="relu")(data=a)
        r_T = NKITranspose()(data=r)
        out = NKIMatmul()(stationary=r_T, moving=b)
        return out

    ir = build_ir(f, {"a": ((128, 128), "bfloat16"), "b": ((128, 512), "bfloat16")})
    assert LoadTranspose().apply(ir) is ir


def test_enumeration_names_each_distinct_subset() -> None:
    names = [
        n for n, _ in enumerate_rewrite_combinations(small_ir("matmul_lhs_rhs"), [LoadTranspose()])
    ]
    assert names == ["base", "LoadTranspose"]
    # The pattern is absent: the rewritten IR repeats "base" and is dropped.
    names = [n for n, _ in enumerate_rewrite_combinations(small_ir("matmul"), [LoadTranspose()])]
    assert names == ["base"]


def test_enumerating_a_rewrite_twice_dedupes_by_structure(lhs_rhs_ir) -> None:
    variants = dict(enumerate_rewrite_combinations(lhs_rhs_ir, [LoadTranspose(), LoadTranspose()]))
    assert list(variants) == ["base", "LoadTranspose"]
    assert variants["base"].structure_key() == lhs_rhs_ir.structure_key()
