"""On-chip memory is live from an allocation's first touch to its last use,
and a kernel that needs more fails like the compiler."""

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

# Each [128, 16384] fp32 tile takes 64 KiB of every SBUF partition. The
# second loop reads every tile again, so all of them are live together.
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
    for t in tiles:
        nisa.dma_copy(dst=a, src=t[:, 0:1])
    return a
"""
)

# The same list, but each tile's only use is its memset: dead at once.
WRITE_ONLY_TILES = KEEP_TILES.replace(
    "    for t in tiles:\n        nisa.dma_copy(dst=a, src=t[:, 0:1])\n", ""
)

REBIND_TILES = (
    HEADER
    + """
@nki.jit
def k(a):
    for i in nl.affine_range(50):
        t = nl.ndarray((128, 16384), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)
        nisa.dma_copy(dst=a, src=t[:, 0:1])
    return a
"""
)

# Four buffers of 64 KiB declared, one used: what a kernel with spare
# multi-buffer copies looks like. The hardware runs it.
DECLARED_NOT_TOUCHED = (
    HEADER
    + """
@nki.jit
def k(a):
    spare = [nl.ndarray((128, 16384), dtype=nl.float32, buffer=nl.sbuf) for _ in range(4)]
    used = spare[{index}]
    nisa.memset(dst=used, value=0.0)
    nisa.dma_copy(dst=a, src=used[:, 0:1])
    return a
"""
)


def _run(path, **kw):
    return run_kernel(path, {"a": np.zeros((128, 1), np.float32)}, **kw)


def test_tiles_live_together_run_out_of_sbuf_at_the_overflowing_instruction(kernel_file):
    path, line = kernel_file(KEEP_TILES.format(count=4))
    with pytest.raises(SimError) as err:
        _run(path)
    assert (err.value.kind, err.value.line) == ("capacity", line)
    assert "Out of memory in sbuf: 256 KiB per partition live, limit 192 KiB" in err.value.message


def test_three_tiles_fit(kernel_file):
    path, _ = kernel_file(KEEP_TILES.format(count=3))
    assert _run(path).profile["instruction_count"] == 6


def test_tiles_that_are_never_used_again_take_no_memory_after_their_write(kernel_file):
    path, _ = kernel_file(WRITE_ONLY_TILES.format(count=10))
    assert _run(path).profile["instruction_count"] == 10


@pytest.mark.parametrize("index", [0, 3])
def test_allocations_no_instruction_touches_take_no_memory(kernel_file, index):
    path, _ = kernel_file(DECLARED_NOT_TOUCHED.format(index=index))
    assert _run(path).profile["instruction_count"] == 2


def test_sbuf_size_is_a_parameter(kernel_file):
    path, _ = kernel_file(KEEP_TILES.format(count=3))
    roomy = dataclasses.replace(DEFAULT_PARAMS, sbuf_partition_bytes=256 * 1024)
    path4, _ = kernel_file(KEEP_TILES.format(count=4), name="four.py")
    assert _run(path4, params=roomy).profile["instruction_count"] == 8
    tight = dataclasses.replace(DEFAULT_PARAMS, sbuf_partition_bytes=128 * 1024)
    with pytest.raises(SimError, match="Out of memory in sbuf"):
        _run(path, params=tight)


def test_a_loop_body_allocation_lives_for_one_iteration(kernel_file):
    path, _ = kernel_file(REBIND_TILES)
    assert _run(path).profile["instruction_count"] == 100


PSUM_BANKS = (
    HEADER
    + """
@nki.jit
def k(a):
    accs = [nl.ndarray((128, {width}), dtype=nl.float32, buffer=nl.psum) for _ in range({count})]
    for acc in accs:
        nisa.memset(dst=acc, value=0.0)  # <-
    for acc in accs:
        nisa.dma_copy(dst=a, src=acc[:, 0:1])
    return a
"""
)


@pytest.mark.parametrize(
    ("width", "fits", "over", "live_kib"),
    [
        # 2 KiB accumulators: one bank each, nine need nine of the eight banks.
        (512, 8, 9, "18"),
        # 1.5 KiB: two do not fit in one bank and a tile never straddles two,
        # so each still takes a whole bank (not 13.5 KiB for nine).
        (384, 8, 9, "18"),
        # 256 B: eight pack into each bank, 64 fill PSUM.
        (64, 64, 65, "16.25"),
    ],
)
def test_psum_is_charged_bytes_packed_into_banks(kernel_file, width, fits, over, live_kib):
    ok, _ = kernel_file(PSUM_BANKS.format(width=width, count=fits), name="fits.py")
    assert _run(ok).profile["instruction_count"] == 2 * fits
    path, line = kernel_file(PSUM_BANKS.format(width=width, count=over))
    with pytest.raises(SimError) as err:
        _run(path)
    assert (err.value.kind, err.value.line) == ("capacity", line)
    assert (
        f"Out of memory in psum: {live_kib} KiB per partition live, limit 16 KiB"
        in err.value.message
    )
