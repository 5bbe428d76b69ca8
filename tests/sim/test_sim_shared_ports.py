"""NeuronCore-v2 engines that share a memory port take turns on it: VectorE and GpSimd
on SBUF, VectorE and ScalarE on PSUM. NeuronCore-v3 lifted both restrictions (the
Trainium2 Architecture Guide for NKI, aws-neuron-sdk nki/about/trainium2_arch.rst
@04832dc, "Data Movement Updates": both "disallowed in NeuronCore-v2")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernelopt.sim import run_kernel
from kernelopt.sim.chips import chip_params

KERNEL = Path(__file__).parent / "kernels" / "shared_ports.py"


def _pair(chip: str, memory: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """(start, end) of the two independent instructions that use ``memory``."""
    a = np.full((128, 2048), 1.5, np.float32)
    b = np.full((128, 2048), -2.0, np.float32)
    run = run_kernel(
        KERNEL, {"a": a, "b": b}, params=chip_params(chip), kernel_kwargs={"memory": memory}
    )
    expected = (
        (2 * a[:, :512], 2 * b[:, :512]) if memory == "sbuf" else (a[:, :512], a[:, 512:1024])
    )
    np.testing.assert_array_equal(run.outputs, np.stack(expected))
    first, second = [i for i, ins in enumerate(run.trace) if ins.engine != "dma"][:2]
    t = run.timeline
    return (t.start_ns[first], t.end_ns[first]), (t.start_ns[second], t.end_ns[second])


@pytest.mark.parametrize("memory", ["sbuf", "psum"])
def test_on_trn2_the_pair_overlaps(memory: str) -> None:
    (s0, e0), (s1, e1) = _pair("trn2", memory)
    assert max(s0, s1) < min(e0, e1)


@pytest.mark.parametrize("memory", ["sbuf", "psum"])
def test_on_trn1_the_pair_takes_turns(memory: str) -> None:
    (s0, e0), (s1, e1) = _pair("trn1", memory)
    assert e0 <= s1 or e1 <= s0
