"""render_ir: loops not unrolled, formatter-stable, knob-sensitive, in sync with ir/."""

from __future__ import annotations

import dataclasses
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from ir_support import IR_DIR, SHIPPED, small_ir, small_workload, workload

from kernelopt.ir import (
    RenderError,
    Scope,
    build_ir,
    ir_for_workload,
    read_knobs,
    render_ir,
    sample,
)
from kernelopt.workload import load_workload

FULL = Scope.FULL


def _cube(n: int):
    w = workload("matmul")
    return build_ir(
        w.f_nkigym, {"lhsT": ((n, n), "bfloat16"), "rhs": ((n, n), "bfloat16")}, "matmul"
    )


def test_source_size_does_not_grow_with_tile_count() -> None:
    small, big = _cube(512), _cube(4096)  # 16 vs 8192 matmul tiles
    for seed in range(5):
        a = sample(small, random.Random(seed))
        # The same knob shape at the big size: same order and scopes, blocks scaled.
        blocks = {
            d: n * 8 if big.dim[d].num_tiles % (n * 8) == 0 else n
            for d, n in a.ltiles_per_block.items()
        }
        b = big.with_knobs(a.loop_order, blocks, a.buffer_scopes)
        src_a, src_b = render_ir(a), render_ir(b)
        assert src_a.count("\n") == src_b.count("\n")
        # Only numerals differ (e.g. trip counts 4 -> 32), never whole statements.
        assert abs(len(src_a) - len(src_b)) < 120


def test_rendering_is_deterministic_across_builds() -> None:
    a = sample(small_ir("matmul_lhs_rhs"), random.Random(5))
    b = sample(small_ir("matmul_lhs_rhs"), random.Random(5))
    assert render_ir(a).encode() == render_ir(b).encode()


@pytest.mark.skipif(shutil.which("ruff") is None, reason="needs the ruff binary")
@pytest.mark.parametrize("name", SHIPPED)
def test_ruff_format_leaves_rendered_source_unchanged(name: str) -> None:
    rng = random.Random(name)
    base = small_ir(name)
    sources = [render_ir(base)] + [render_ir(sample(base, rng)) for _ in range(15)]
    sources.append(render_ir(ir_for_workload(IR_DIR / name / "workload.py")))
    for src in sources:
        done = subprocess.run(
            ["ruff", "format", "--line-length", "100", "-"],
            input=src,
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout == src


def test_knobs_change_the_rendered_structure(matmul_ir) -> None:
    default = render_ir(matmul_ir)
    # Loads sit inside the K loop by default: allocated and copied per tile.
    assert "    sbuf_rhs = nl.ndarray((128, 1, 512)" in default
    hoisted = matmul_ir.with_knobs(
        buffer_scopes={**matmul_ir.buffer_scopes, "sbuf_rhs": {"d0": FULL, "d2": FULL}}
    )
    text = render_ir(hoisted)
    # FULL on both dims: one allocation before every loop, one wide load per K tile.
    assert "\n    sbuf_rhs = nl.ndarray((128, 2, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)" in text
    assert "src=rhs[row : row + 128, 0:1024]" in text
    blocked = matmul_ir.with_knobs(ltiles_per_block={"d0": 2, "d1": 1, "d2": 2})
    text = render_ir(blocked)
    assert "for t2 in nl.affine_range(2):" in text and "for b2 in nl.affine_range(1):" in text
    per_block = matmul_ir.with_knobs(
        buffer_scopes={
            **matmul_ir.buffer_scopes,
            "psum_out": {"d1": Scope.PER_TILE, "d2": Scope.PER_TILE, "d0": Scope.PER_BLOCK},
        }
    )
    text = render_ir(per_block)
    # A K-block PSUM drains by adding into an fp32 SBUF accumulator.
    assert "sbuf_out = nl.ndarray((128, 1, 512), dtype=nl.float32" in text
    assert "op=nl.add" in text and "nl.sequential_range" in text


def test_only_accumulators_that_instructions_add_into_are_zeroed(tmp_path, matmul_ir) -> None:
    """A PSUM accumulator of matmuls is not memset (the first matmul into a fresh PSUM
    tensor overwrites, the rest add); an fp32 SBUF accumulator that K-block drains add
    into still is. Both kernels are correct on the simulator."""
    from kernelopt.sim import check_kernel

    per_block = matmul_ir.with_knobs(
        buffer_scopes={
            **matmul_ir.buffer_scopes,
            "psum_out": {"d1": Scope.PER_TILE, "d2": Scope.PER_TILE, "d0": Scope.PER_BLOCK},
        }
    )
    for name, ir, zeroed in (("full", matmul_ir, []), ("blocks", per_block, ["sbuf_out"])):
        text = render_ir(ir)
        assert [
            line.split("dst=")[1].split(",")[0]
            for line in text.splitlines()
            if "nisa.memset(" in line
        ] == zeroed
        kernel = tmp_path / f"{name}.py"
        kernel.write_text(text)
        report = check_kernel(kernel, small_workload("matmul"))
        assert report.correct, report.error


def test_rendered_kernel_shape() -> None:
    text = render_ir(small_ir("matmul_gelu"))
    assert text.startswith("# matmul_gelu:")
    assert "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n" in text
    assert "@nki.jit\ndef matmul_gelu(lhsT, rhs):\n" in text
    assert "buffer=nl.shared_hbm" in text and text.endswith("    return out\n")
    assert "nisa.activation(" in text and "op=nl.gelu" in text


def test_invalid_ir_does_not_render(matmul_ir) -> None:
    with pytest.raises(RenderError, match="ltiles_per_block"):
        render_ir(matmul_ir.with_knobs(ltiles_per_block={"d0": 3, "d1": 1, "d2": 1}))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_kernel_is_the_rendering_of_shipped_knobs(name: str) -> None:
    folder = IR_DIR / name
    ir = read_knobs(folder / "knobs.json", ir_for_workload(folder / "workload.py"))
    assert (folder / "kernel.py").read_text() == render_ir(ir)


def _executed(ir, tmp_path, name: str):
    """The instructions the simulator executes for ``ir``, as (op, partitions, free, psum)."""
    from kernelopt.sim import run_kernel
    from kernelopt.workload import make_inputs

    w = small_workload(name)
    path = tmp_path / f"{name}.py"
    path.write_text(render_ir(ir))
    run = run_kernel(path, make_inputs(w.input_specs, 0), compute=False)
    return [(i.op, i.partitions, i.free, i.psum_read) for i in run.trace]


def test_an_elementwise_op_spans_every_free_tile_it_covers_in_one_instruction(tmp_path) -> None:
    ir = small_ir("layernorm")  # x: 256 x 1024, its row dim in two 512-wide tiles
    assert ir.dim["d1"].num_tiles == 2 and ir.buffer_scopes["sbuf_out"]["d1"] == Scope.PER_TILE
    held = ir.with_knobs(
        buffer_scopes={**ir.buffer_scopes, "sbuf_out": {**ir.buffer_scopes["sbuf_out"], "d1": FULL}}
    )
    for knobs, width in ((ir, 512), (held, 1024)):
        # The squared deviation reads whole rows (held FULL): one 1024-wide instruction
        # per row tile; the last tensor_scalar covers as much as its result holds.
        ops = _executed(knobs, tmp_path, "layernorm")
        acts = [free for op, _, free, _ in ops if op == "activation" and free > 1]
        assert acts == [1024, 1024]
        last = [free for op, _, free, _ in ops if op == "tensor_scalar" and free > 1]
        assert set(last) == {width} and len(last) == 2 * 1024 // width


def test_a_psum_operand_keeps_one_instruction_per_bank(tmp_path) -> None:
    from kernelopt.ir.rewrites import FusedDrain

    fused = FusedDrain().apply(small_ir("matmul_gelu"))  # gelu reads the PSUM accumulator
    out = fused.buffer_scopes["sbuf_out"]
    held = fused.with_knobs(
        buffer_scopes={**fused.buffer_scopes, "sbuf_out": dict.fromkeys(out, FULL)}
    )
    for ir in (held, *(sample(fused, random.Random(seed)) for seed in range(3))):
        acts = [
            (free, psum)
            for op, _, free, psum in _executed(ir, tmp_path, "matmul_gelu")
            if op == "activation"
        ]
        assert acts and all(psum and free <= 512 for free, psum in acts)


def test_a_copy_out_of_psum_takes_a_run_of_transposed_tiles_of_one_bank(tmp_path) -> None:
    """x's transpose held whole (two row tiles of 128 x 128 bf16 per column tile: 512 B of
    one PSUM bank) is copied to SBUF two tiles per instruction, a 3-D view, and the
    simulator finds the kernel right; the cost model counts what runs."""
    from kernelopt.ir.cost import _Counter, _instructions
    from kernelopt.ir.derive import derive
    from kernelopt.ir.engines import engine_plan
    from kernelopt.sim import check_kernel

    ir = small_ir("rmsnorm_matmul")
    state = ir.with_knobs(
        buffer_scopes={b.name: dict.fromkeys(b.knob_dims, FULL) for b in ir.buffers}
    )
    text = render_ir(state)
    assert "src=psum_xt[:, l1 * 2 : l1 * 2 + 2, " in text
    copies = [
        free
        for op, _, free, psum in _executed(state, tmp_path, "rmsnorm_matmul")
        if op == "tensor_copy" and psum and free == 256
    ]
    assert len(copies) == 2  # one per column tile, each two row tiles wide
    placement = derive(state)[0]
    copy = next(op for op in state.operators if op.name == "copy_xt")
    counted = _instructions(
        state, copy, _Counter(state, placement), placement.fire[copy.name], engine_plan(state)
    )
    assert [(n, ins.free) for n, ins in counted] == [(2, 256)]
    kernel = tmp_path / "held.py"
    kernel.write_text(text)
    report = check_kernel(kernel, small_workload("rmsnorm_matmul"))
    assert report.correct, report.error


def test_loads_over_the_same_row_tiles_share_one_loop_tile_by_tile(tmp_path) -> None:
    """x and the residual, both held whole, load x0, r0, x1, r1 in one loop: the residual
    add of the first row tile starts once its two tiles are in, not after all of x."""
    from kernelopt.sim import check_kernel, run_kernel
    from kernelopt.workload import make_inputs

    path = Path(__file__).parent / "llm_workloads" / "add_rmsnorm.py"
    full = load_workload(path)
    w = dataclasses.replace(full, input_specs=full.module.SMALL_SPECS)
    ir = build_ir(w.f_nkigym, w.input_specs, "add_rmsnorm")
    state = ir.with_knobs(
        buffer_scopes={
            **ir.buffer_scopes,
            **{b: dict.fromkeys(ir.buffer_scopes[b], FULL) for b in ("sbuf_x", "sbuf_residual")},
        }
    )
    text = render_ir(state)
    kernel = tmp_path / "add_rmsnorm.py"
    kernel.write_text(text)
    run = run_kernel(kernel, make_inputs(w.input_specs, 0), compute=False)
    loads = [i for i, ins in enumerate(run.trace) if ins.op == "dma_copy" and ins.hbm_read]
    names = [run.allocations[run.trace[i].reads[0][0]].name for i in loads]
    assert names == ["x", "residual"] * 2  # 256 rows: two row tiles each
    assert text.count("row = ") == 2  # one row offset per load loop and per store loop
    first_add = next(i for i, ins in enumerate(run.trace) if ins.op == "tensor_tensor")
    timeline = run.timeline
    assert timeline.start_ns[first_add] < timeline.end_ns[loads[2]]  # before x1 is in
    report = check_kernel(kernel, w)
    assert report.correct, report.error


def test_a_chain_over_rows_held_whole_runs_row_by_row_in_one_loop(tmp_path) -> None:
    """Every softmax buffer held whole: the load, max, exp, sum, reciprocal, scale and
    store of row tile 0 are issued before any of row tile 1 (one loop), so row 0's exp
    starts before row 1's max ends, and the result is right."""
    from kernelopt.sim import check_kernel, run_kernel
    from kernelopt.workload import make_inputs

    ir = small_ir("softmax")
    state = ir.with_knobs(
        buffer_scopes={b: dict.fromkeys(s, FULL) for b, s in ir.buffer_scopes.items()}
    )
    text = render_ir(state)
    assert text.count("for l0 in nl.affine_range(2):") == 1
    kernel = tmp_path / "softmax.py"
    kernel.write_text(text)
    run = run_kernel(kernel, make_inputs(small_workload("softmax").input_specs, 0), compute=False)
    ops = [ins.op for ins in run.trace if ins.op != "memset"]
    row = ["dma_copy", "tensor_reduce", "activation", "tensor_reduce", "reciprocal"]
    assert ops == (row + ["tensor_scalar", "dma_copy"]) * 2
    exps = [i for i, ins in enumerate(run.trace) if ins.op == "activation"]
    maxes = [i for i, ins in enumerate(run.trace) if ins.op == "tensor_reduce"][::2]
    timeline = run.timeline
    assert timeline.start_ns[exps[0]] < timeline.end_ns[maxes[1]]
    report = check_kernel(kernel, small_workload("softmax"))
    assert report.correct, report.error


def test_a_row_tiles_matmul_drain_and_store_run_before_the_next_row_tiles(tmp_path) -> None:
    """softmax(s) @ v with every buffer held whole: after the transposes, each row tile's
    PSUM copies, matmuls, drain and store share one loop over the output's rows, so row
    tile 0 is drained and stored before row tile 1's matmuls are issued, and drained
    while they run (each op over all rows in turn drained nothing until every row's
    matmuls were done)."""
    from kernelopt.sim import check_kernel, run_kernel
    from kernelopt.workload import make_inputs

    path = Path(__file__).parent / "llm_workloads" / "softmax_matmul.py"
    full = load_workload(path)
    w = dataclasses.replace(full, input_specs=full.module.SMALL_SPECS)
    ir = build_ir(w.f_nkigym, w.input_specs, "softmax_matmul")
    state = ir.with_knobs(
        buffer_scopes={b: dict.fromkeys(s, FULL) for b, s in ir.buffer_scopes.items()}
    )
    kernel = tmp_path / "softmax_matmul.py"
    kernel.write_text(render_ir(state))
    run = run_kernel(kernel, make_inputs(w.input_specs, 0), compute=False)
    trace, timeline = run.trace, run.timeline
    matmuls = [i for i, ins in enumerate(trace) if ins.op == "nc_matmul"]
    stores = [i for i, ins in enumerate(trace) if ins.op == "dma_copy" and not ins.hbm_read]
    assert len(stores) == 2 and len(matmuls) == 4  # 256 rows, 256 contraction: 2 x 2
    assert matmuls[1] < stores[0] < matmuls[2]  # row 0's two matmuls, its store, row 1's
    drain = stores[0] - 1  # row 0's PSUM drain, issued right before its store
    assert trace[drain].op == "tensor_copy" and drain > matmuls[1]
    assert timeline.start_ns[drain] < timeline.end_ns[matmuls[-1]]  # while row 1 multiplies
    report = check_kernel(kernel, w)
    assert report.correct, report.error
