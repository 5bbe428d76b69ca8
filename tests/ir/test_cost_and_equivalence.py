"""What the IR predicts of a kernel before it runs, checked against the simulator itself.

``cost.engine_times`` counts each engine's instructions from the knob state;
``effective.effective_key`` says when two knob states run the same instructions.
Both are compared with what the rendered kernels execute in the simulator.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ir_support import small_ir, small_workload

from kernelopt.ir import REWRITES, enumerate_rewrite_combinations, render_ir, sample
from kernelopt.ir.cost import engine_times
from kernelopt.ir.effective import effective_key
from kernelopt.ir.model import Scope
from kernelopt.ir.validate import repaired
from kernelopt.proposers.moves import knobs_of, sweep
from kernelopt.sim import run_kernel
from kernelopt.sim.cost import duration_ns
from kernelopt.sim.trn2 import DEFAULT_PARAMS
from kernelopt.workload import make_inputs

NAMES = ["rmsnorm_matmul", "softmax", "layernorm", "swiglu", "matmul_lhs_rhs", "matmul_gelu"]


def _trace(ir, name: str, tmp: Path):
    path = tmp / "kernel.py"
    path.write_text(render_ir(ir))
    w = small_workload(name)
    return run_kernel(path, make_inputs(w.input_specs, 0), compute=False).trace


def _states(name: str, seed: int) -> list:
    rng = random.Random(seed)
    variants = [
        v for _, v in enumerate_rewrite_combinations(small_ir(name), list(REWRITES.values()))
    ]
    return [sample(v, rng) for v in variants]


@pytest.mark.parametrize("name", NAMES)
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_engine_times_are_what_the_simulated_kernel_issues(
    name: str, seed: int, tmp_path: Path
) -> None:
    for ir in _states(name, seed):
        busy: dict[str, float] = {}
        for ins in _trace(ir, name, tmp_path):
            if ins.op != "memset":  # accumulator zeroing: not counted
                busy[ins.engine] = busy.get(ins.engine, 0.0) + duration_ns(ins, DEFAULT_PARAMS)
        counted = engine_times(ir)
        assert counted is not None
        for engine in ("tensor", "vector", "scalar"):
            assert counted.__getattribute__(engine) == pytest.approx(busy.get(engine, 0.0)), (
                engine,
                ir.variant,
            )
        # DMA: the data time of every transfer, and apart from it their serial issue.
        transfers = [i for i in _trace(ir, name, tmp_path) if i.engine == "dma"]
        data = sum(duration_ns(i, DEFAULT_PARAMS) for i in transfers)
        issue = len(transfers) * DEFAULT_PARAMS.dma_issue_ns
        assert counted.dma_data == pytest.approx(data)
        assert counted.dma_issue == pytest.approx(issue)


@pytest.mark.parametrize("name", ["rmsnorm_matmul", "softmax", "matmul_gelu"])
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
def test_no_simulated_kernel_beats_its_counted_bound(name: str, seed: int, tmp_path: Path) -> None:
    # The proposer leaves for last a state whose bound is above BEST's time: that is
    # only safe while the bound is a lower bound of what the simulator measures.
    w = small_workload(name)
    for ir in _states(name, seed):
        path = tmp_path / "kernel.py"
        path.write_text(render_ir(ir))
        measured = run_kernel(path, make_inputs(w.input_specs, 0), compute=False)
        counted = engine_times(ir)
        assert counted is not None
        assert counted.bound <= measured.profile["total_time"] * 1e9 * 1.0001, ir.variant


def _executed(ir, name: str, tmp: Path) -> list[tuple]:
    """The instruction stream, without source lines and allocation ids."""
    return [
        (i.op, i.engine, i.partitions, i.free, i.nbytes, i.row_bytes, i.psum_read, i.inputs)
        for i in _trace(ir, name, tmp)
    ]


@pytest.mark.parametrize("name", ["rmsnorm_matmul", "softmax", "swiglu"])
@settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1))
# 778: a PSUM copy allocated one level up joins the matmuls' row run (render_rows),
# another instruction order under a key that once ignored runs.
@example(seed=778)
def test_equal_effective_keys_run_equal_instruction_streams(
    name: str, seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    for start in _states(name, seed):
        key, stream = effective_key(start), None
        for knob in knobs_of(start):
            for moved in list(sweep(start, knob, rng))[:3]:
                if effective_key(moved) != key:
                    continue
                stream = stream or _executed(start, name, tmp_path)
                assert _executed(moved, name, tmp_path) == stream, (knob, moved.variant)


def test_a_block_of_side_by_side_loops_is_the_same_kernel() -> None:
    ir = small_ir("matmul")
    order = list(ir.loop_order)
    d = "d2"  # the moving free dim: 2 tiles
    # block and tile of d2 side by side, every buffer one tile of it: b * 2 + t is b.
    order.remove(f"{d}.tile")
    order.insert(order.index(f"{d}.block") + 1, f"{d}.tile")
    side = ir.with_knobs(loop_order=order)
    blocked = side.with_knobs(ltiles_per_block={**side.ltiles_per_block, d: 2})
    assert render_ir(blocked) != render_ir(side)
    assert effective_key(blocked) == effective_key(side)
    # Holding the block in the result instead changes where it is allocated: another kernel.
    scopes = {**blocked.buffer_scopes, "sbuf_out": {**blocked.buffer_scopes["sbuf_out"]}}
    scopes["sbuf_out"][d] = Scope.PER_BLOCK
    held = repaired(blocked.with_knobs(buffer_scopes=scopes))
    assert held is not None and held.buffer_scopes["sbuf_out"][d] == Scope.PER_BLOCK
    assert effective_key(held) != effective_key(side)
