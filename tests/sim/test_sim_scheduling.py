"""The compiler's instruction scheduler: list scheduling into idle gaps, or
program order with enable-instruction-scheduling=false."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import run_kernel
from kernelopt.sim.compiler import compiler_options

# VectorE first copies a tile that arrives late (a large DMA), then works on
# a tile that is ready early. Only the program order ties the second to the
# first.
LATE_THEN_EARLY = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(big, small):
    late = nl.ndarray((128, 8192), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=late, src=big)
    early = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=early, value=1.0)
    a = nl.ndarray((128, 8192), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=a, src=late)
    b = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=b, src=early)
    nisa.dma_copy(dst=big, src=a)
    nisa.dma_copy(dst=small, src=b)
    return big, small
"""

OFF = ("--internal-backend-options=--enable-instruction-scheduling=false",)


def _copies(args: tuple[str, ...], kernel_file) -> tuple:
    path, _ = kernel_file(LATE_THEN_EARLY)
    inputs = {"big": np.ones((128, 8192), np.float32), "small": np.ones((128, 512), np.float32)}
    run = run_kernel(path, inputs, compiler_args=args)
    first, second = (i for i, ins in enumerate(run.trace) if ins.op == "tensor_copy")
    t = run.timeline
    return (t.start_ns[first], t.end_ns[first]), (t.start_ns[second], t.end_ns[second]), run


def test_with_the_scheduler_on_a_later_instruction_fills_an_idle_gap(kernel_file):
    (late_start, _), (early_start, early_end), run = _copies((), kernel_file)
    assert early_end <= late_start  # ran before the instruction ahead of it
    np.testing.assert_array_equal(run.outputs[1], np.ones((128, 512), np.float32))


def test_with_the_scheduler_off_program_order_stands(kernel_file):
    (_, late_end), (early_start, _), _ = _copies(OFF, kernel_file)
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
