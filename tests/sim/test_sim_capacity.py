"""Live SBUF/PSUM bytes follow allocation lifetimes and fail like the compiler."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kernelopt.sim import DEFAULT_PARAMS, SimError, run_kernel

HEADER = """
import nki
import nki.isa as nisa
import nki.language as nl

"""

# Each [128, 16384] fp32 tile takes 64 KiB of every SBUF partition.
KEEP_TILES = (
    HEADER
    + """
@nki.jit
def k(a):
    tiles = []
    for i in nl.affine_range({count}):
        t = nl.ndarray((128, 16384), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)  # <-
        tiles.append(t)
    return a
"""
)

REBIND_TILES = (
    HEADER
    + """
@nki.jit
def k(a):
    for i in nl.affine_range(50):
        t = nl.ndarray((128, 16384), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)
    return a
"""
)


def _run(path, **kw):
    return run_kernel(path, {"a": np.zeros((4,), np.float32)}, **kw)


def test_tiles_kept_alive_in_a_list_run_out_of_sbuf(kernel_file):
    path, line = kernel_file(KEEP_TILES.format(count=4))
    with pytest.raises(SimError) as err:
        _run(path)
    assert (err.value.kind, err.value.line) == ("capacity", line)
    assert "Out of memory in sbuf: 256 KiB per partition live, limit 192 KiB" in err.value.message


def test_three_tiles_fit(kernel_file):
    path, _ = kernel_file(KEEP_TILES.format(count=3))
    assert _run(path).profile["instruction_count"] == 3


def test_sbuf_size_is_a_parameter(kernel_file):
    path, _ = kernel_file(KEEP_TILES.format(count=3))
    roomy = dataclasses.replace(DEFAULT_PARAMS, sbuf_partition_bytes=256 * 1024)
    path4, _ = kernel_file(KEEP_TILES.format(count=4), name="four.py")
    assert _run(path4, params=roomy).profile["instruction_count"] == 4
    tight = dataclasses.replace(DEFAULT_PARAMS, sbuf_partition_bytes=128 * 1024)
    with pytest.raises(SimError, match="Out of memory in sbuf"):
        _run(path, params=tight)


def test_a_loop_body_allocation_lives_for_one_iteration(kernel_file):
    path, _ = kernel_file(REBIND_TILES)
    assert _run(path).profile["instruction_count"] == 50


def test_psum_is_handed_out_in_banks(kernel_file):
    # Nine one-column accumulators need nine of the eight 2 KiB banks.
    source = (
        HEADER
        + """
@nki.jit
def k(a):
    accs = [nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.psum) for _ in range({count})]
    for acc in accs:
        nisa.memset(dst=acc, value=0.0)  # <-
    return a
"""
    )
    ok, _ = kernel_file(source.format(count=8), name="eight.py")
    assert _run(ok).profile["instruction_count"] == 8
    path, line = kernel_file(source.format(count=9))
    with pytest.raises(SimError) as err:
        _run(path)
    assert (err.value.kind, err.value.line) == ("capacity", line)
    assert "Out of memory in psum: 18 KiB per partition live, limit 16 KiB" in err.value.message
