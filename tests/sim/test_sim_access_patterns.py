"""``t.ap(pattern=, offset=)``: the access-pattern views of the current API, against
hand-computed results (NKI access patterns deep dive, aws-neuron-sdk
``nki/deep-dives/nki-aps.rst``)."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

HEADER = """
import nki
import nki.isa as nisa
import nki.language as nl

"""


def _run(kernel_file, body: str, **inputs: np.ndarray):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs)


def test_the_deep_dives_example_reads_the_right_half_of_each_partition(kernel_file) -> None:
    # t (16, 16) on chip; pattern [[16, 16], [1, 8]] at offset 8 is t[0:16, 8:16].
    x = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((16, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((16, 16), dtype=x.dtype, buffer=nl.sbuf)
    half = nl.ndarray((16, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_copy(dst=half, src=t.ap(pattern=[[16, 16], [1, 8]], offset=8))
    nisa.dma_copy(dst=out, src=half)
    return out
"""
    run = _run(kernel_file, body, x=x)
    # Row p holds 16 p + 8 .. 16 p + 15.
    assert run.outputs[3].tolist() == [56.0 + i for i in range(8)]
    assert run.outputs[15, 7] == 255.0


def test_an_hbm_pattern_may_read_overlapping_rows(kernel_file) -> None:
    # Partition p takes rows p and p + 1 of a (4, 3) tensor: steps [3, 3] then [3, 2], [1, 3].
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((3, 6), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((3, 2, 3), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[3, 3], [3, 2], [1, 3]], offset=0))
    nisa.dma_copy(dst=out, src=t.ap(pattern=[[6, 3], [1, 6]]))
    return out
"""
    run = _run(kernel_file, body, x=x)
    assert run.outputs.tolist() == [
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
        [3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        [6.0, 7.0, 8.0, 9.0, 10.0, 11.0],
    ]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("[[32, 8], [1, 16]]", "its step must be the free size 16"),
        ("[[16, 15], [1, 17]]", "runs past the end of a partition"),
        ("[[16, 17], [1, 16]]", "which has 256"),
    ],
)
def test_patterns_the_hardware_cannot_read_are_refused(kernel_file, pattern, message) -> None:
    body = f"""
@nki.jit
def k(x):
    out = nl.ndarray((16, 16), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((16, 16), dtype=x.dtype, buffer=nl.sbuf)
    u = nl.ndarray((16, 16), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_copy(dst=u, src=t.ap(pattern={pattern}, offset=0))
    nisa.dma_copy(dst=out, src=u)
    return out
"""
    with pytest.raises(SimError, match=message):
        _run(kernel_file, body, x=np.zeros((16, 16), np.float32))


def test_a_pattern_is_taken_on_the_whole_tensor_only(kernel_file) -> None:
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((16, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((16, 16), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t[:, 0:8].ap(pattern=[[16, 16], [1, 8]]))
    return out
"""
    with pytest.raises(SimError, match="on a whole nl.ndarray"):
        _run(kernel_file, body, x=np.zeros((16, 16), np.float32))
