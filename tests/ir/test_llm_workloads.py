"""A dozen LLM operators written in the op classes (tests/ir/llm_workloads/), none shipped.

Each builds (``kernelopt ir show``), its op graph computes its own f_numpy, and every
rewrite variant's sampled states render to kernels the simulator finds correct (at the
workload's SMALL_SPECS, two tiles per dim). ``benchmarks/tuning.py --workload W --runs``
measures what a short run reaches on them.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import tempfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelopt.ir import REWRITES, build_ir, enumerate_rewrite_combinations, render_ir, sample
from kernelopt.ir.cli import ir_group
from kernelopt.sim import check_kernel
from kernelopt.workload import Workload, load_workload, make_inputs

FOLDER = Path(__file__).resolve().parent / "llm_workloads"
NAMES = sorted(p.stem for p in FOLDER.glob("*.py"))


def small(name: str) -> Workload:
    w = load_workload(FOLDER / f"{name}.py")
    return dataclasses.replace(w, input_specs=w.module.SMALL_SPECS)


@functools.cache
def variants(name: str) -> dict[str, object]:
    # Cached: every example of every variant would otherwise re-derive them all.
    w = small(name)
    base = build_ir(w.f_nkigym, w.input_specs, name=name)
    return dict(enumerate_rewrite_combinations(base, list(REWRITES.values())))


CASES = [(name, variant) for name in NAMES for variant in variants(name)]


def test_there_are_a_dozen_and_every_one_builds_with_ir_show() -> None:
    assert len(NAMES) >= 12
    for name in NAMES:
        result = CliRunner().invoke(ir_group, ["show", str(FOLDER / f"{name}.py")])
        assert result.exit_code == 0, result.output
        assert "== base" in result.output and "operators:" in result.output


@pytest.mark.parametrize("name", NAMES)
def test_the_op_graph_computes_f_numpy(name: str) -> None:
    w = small(name)
    inputs = {k: v.astype(np.float32) for k, v in make_inputs(w.input_specs, 1).items()}
    expected = w.f_numpy(**inputs)
    assert w.f_nkigym is not None
    np.testing.assert_allclose(w.f_nkigym(**inputs), expected, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(("name", "variant"), CASES)
@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_sampled_states_pass_the_simulator(name: str, variant: str, seed: int) -> None:
    ir = sample(variants(name)[variant], random.Random(seed))
    with tempfile.TemporaryDirectory() as tmp:
        kernel = Path(tmp) / f"{name}.py"
        kernel.write_text(render_ir(ir))
        report = check_kernel(kernel, small(name))
    assert report.correct, f"{report.error_kind}: {report.error}\n{ir!r}"
