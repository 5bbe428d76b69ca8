"""The compiler's instruction scheduler: list scheduling into idle gaps, or
program order with enable-instruction-scheduling=false."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernelopt.sim import run_kernel
from kernelopt.sim.compiler import compiler_options

# VectorE first copies a tile that arrives late (a large DMA), then works on
# a tile that is ready early: only the program order ties the second to the
# first.
LATE_THEN_EARLY = Path(__file__).parent / "kernels" / "late_then_early.py"

OFF = ("--internal-backend-options=--enable-instruction-scheduling=false",)


def _copies(args: tuple[str, ...]) -> tuple:
    path = LATE_THEN_EARLY
    inputs = {"big": np.ones((128, 8192), np.float32), "small": np.ones((128, 512), np.float32)}
    run = run_kernel(path, inputs, compiler_args=args)
    first, second = (i for i, ins in enumerate(run.trace) if ins.op == "tensor_copy")
    t = run.timeline
    return (t.start_ns[first], t.end_ns[first]), (t.start_ns[second], t.end_ns[second]), run


def test_with_the_scheduler_on_a_later_instruction_fills_an_idle_gap():
    (late_start, _), (early_start, early_end), run = _copies(())
    assert early_end <= late_start  # ran before the instruction ahead of it
    np.testing.assert_array_equal(run.outputs[1], np.ones((128, 512), np.float32))


def test_with_the_scheduler_off_program_order_stands():
    (_, late_end), (early_start, _), _ = _copies(OFF)
    assert early_start >= late_end


@pytest.mark.parametrize(
    "args, on",
    [
        ((), True),
        (("enable-linear-scan-allocation=false", "enable-instruction-scheduling=false"), False),
        (("--enable-instruction-scheduling=false",), False),
        (OFF, False),
        (("--internal-backend-options='--foo=1 --enable-instruction-scheduling=false'",), False),
        (("enable-instruction-scheduling=false", "enable-instruction-scheduling=true"), True),
        (("--disable-something-enable-instruction-scheduling=false",), True),
        (("-O2", "--lnc", "1"), True),
    ],
)
def test_the_option_is_read_however_it_is_spelled(args, on):
    assert compiler_options(args).instruction_scheduling is on


def test_a_malformed_value_is_an_error():
    with pytest.raises(ValueError, match="expects true or false"):
        compiler_options(("enable-instruction-scheduling=maybe",))
