"""PSUM drains and the VectorE/ScalarE plan: what a drain does when its reduced dim is
one block, and which engine a PSUM copy goes to."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from ir_support import small_ir, small_workload

import kernelopt.ir.render as render
from kernelopt.ir import build_ir, render_ir, sample, validity_report
from kernelopt.ir.engines import engine_plan
from kernelopt.ir.rewrites import apply_variant
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

# A residual rms norm, a gelu, then a matmul: ScalarE holds the square's row sum and
# the gelu, VectorE the residual add; the gelu's transposes come back from PSUM and
# the product is drained from PSUM, each by a copy either engine may run.
RESIDUAL_NORM_GELU_MATMUL = """
import numpy as np
from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorTensor, NKITranspose


def f_nkigym(x, y, w):
    h = NKITensorTensor(op="add")(data1=x, data2=y)
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=h))
    rs = NKIActivation(op="rsqrt", scale=1.0 / 1024, bias=1e-5)(data=ss)
    g = NKIActivation(op="gelu")(data=NKIActivation(op="copy", scale=rs)(data=h))
    return NKIMatmul()(stationary=NKITranspose()(data=g), moving=w)


def f_numpy(x, y, w):
    return f_nkigym(*(np.asarray(a, dtype=np.float32) for a in (x, y, w)))


INPUT_SPECS = {"x": ((512, 1024), "bfloat16"), "y": ((512, 1024), "bfloat16"),
               "w": ((1024, 512), "bfloat16")}
"""
VARIANT = "ScaleIntoActivation+ActivationReduce"


def _with_k_blocks(ir, blocks: int):
    k = ir.buffer["psum_out"].lifetime_dims[0]
    scopes = {**ir.buffer_scopes, "psum_out": {**ir.buffer_scopes["psum_out"], k: "PER_BLOCK"}}
    per = ir.dim[k].num_tiles // blocks
    return ir.with_knobs(ltiles_per_block={**ir.ltiles_per_block, k: per}, buffer_scopes=scopes)


@pytest.mark.parametrize("blocks", [1, 2])
def test_a_drain_adds_block_sums_only_when_its_reduced_dim_has_several_blocks(
    tmp_path: Path, blocks: int
) -> None:
    """PSUM held per K block: with two blocks each block's partial sum is added into a
    zeroed SBUF accumulator; with one block that partial sum is the whole product, so it
    is copied out, with no memset and no accumulator to add to."""
    state = _with_k_blocks(small_ir("matmul"), blocks)
    assert validity_report(state) == []
    text = render_ir(state)
    adds = blocks > 1
    assert ("op=nl.add" in text) is adds
    assert ("nisa.memset(" in text) is adds
    assert ("nisa.tensor_copy(" in text) is not adds
    kernel = tmp_path / "kernel.py"
    kernel.write_text(text)
    report = check_kernel(kernel, small_workload("matmul"))
    assert report.correct, report.error


def test_a_psum_copy_goes_to_scalar_engine_which_reads_psum_at_twice_the_rate(
    tmp_path: Path, monkeypatch
) -> None:
    """Counted at one PSUM rate for both engines, ScalarE (the gelu, the square) looks
    the busier and the transposes' copies go to VectorE. At each engine's own rate
    (VectorE two cycles an element, ScalarE one: ``sim.trn2``) they go to ScalarE, and
    on the simulator every drawn state runs faster than with them on VectorE."""
    path = tmp_path / "workload.py"
    path.write_text(RESIDUAL_NORM_GELU_MATMUL)
    w = load_workload(path)
    # The row sum fused into the square and the norm's scale into the gelu: ScalarE runs
    # both, VectorE only the residual add.
    ir = apply_variant(build_ir(w.f_nkigym, w.input_specs, name="k"), VARIANT)
    plan = engine_plan(ir)
    copies = [op.name for op in ir.operators if op.kind == "copy"]
    assert copies and all(plan[c] == "scalar" for c in copies)
    planned = render.engine_plan

    def on_vector(state):
        return {**planned(state), **dict.fromkeys(copies, "vector")}

    for seed in range(2):
        state = sample(ir, random.Random(seed))
        times = []
        for choose in (planned, on_vector):
            monkeypatch.setattr(render, "engine_plan", choose)
            kernel = tmp_path / f"kernel_{seed}.py"
            kernel.write_text(render_ir(state))
            report = check_kernel(kernel, w)
            assert report.correct, report.error
            times.append(report.profile["total_time"])
        assert times[0] < times[1], (seed, times)
