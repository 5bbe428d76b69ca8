"""Properties over every shipped workload and rewrite variant: what sample draws is
valid, renders deterministically, and computes f_numpy in the simulator."""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_support import SHIPPED, small_ir, small_workload

from kernelopt.ir import (
    REWRITES,
    enumerate_rewrite_combinations,
    render_ir,
    sample,
    validity_report,
)
from kernelopt.sim import check_kernel

CASES = [
    (name, variant)
    for name in SHIPPED
    for variant, _ in enumerate_rewrite_combinations(small_ir(name), list(REWRITES.values()))
]


@functools.cache
def _variant(name: str, variant: str):
    # Cached: enumerating the variants re-derives every one, and hypothesis calls
    # this once per example; the IR is frozen, so one copy serves every example.
    return dict(enumerate_rewrite_combinations(small_ir(name), list(REWRITES.values())))[variant]


@pytest.mark.parametrize(("name", "variant"), CASES)
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_samples_are_valid_and_render_identically(name: str, variant: str, seed: int) -> None:
    ir = sample(_variant(name, variant), random.Random(seed))
    assert validity_report(ir) == []
    assert ir.variant == variant
    assert render_ir(ir) == render_ir(ir)


@pytest.mark.parametrize(("name", "variant"), CASES)
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 2**32 - 1))
def test_samples_pass_the_simulator_gate(
    name: str, variant: str, seed: int, tmp_path: Path
) -> None:
    ir = sample(_variant(name, variant), random.Random(seed))
    kernel = tmp_path / f"{name}_{seed}.py"
    kernel.write_text(render_ir(ir))
    report = check_kernel(kernel, small_workload(name))
    assert report.correct, f"{report.error_kind}: {report.error}\n{repr(ir)}"
