"""The compiler rotates physical copies of an allocation site's live set.

A list of tiles allocated together is one generation; a new generation
takes the copy freed longest ago, tile by tile, and there are up to
``rotation_depth`` copies as capacity permits. Hand-placed addresses skip
the rotation.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from kernelopt.sim import DEFAULT_PARAMS, run_kernel

BF16 = np.dtype(ml_dtypes.bfloat16)

# A resident stationary block of four 128-column tiles; the moving block is
# a list of K tiles, allocated once (hoisted) or per iteration; every block
# of {width} columns loads it and accumulates four output tiles per 512
# columns, so compute outweighs the loads.
STREAM = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = [nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf) for _ in range(KT)]
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=a[k], src=lhsT[k * 128 : (k + 1) * 128, :])
    {hoisted}
    for n in nl.affine_range(N // {width}):
        {per_iteration}
        for k in nl.affine_range(KT):
            nisa.dma_copy(dst=b[k], src=rhs[k * 128 : (k + 1) * 128, n * {width} : (n + 1) * {width}])
        for j in nl.affine_range({width} // 512):
            for m in nl.affine_range(M // 128):
                acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(KT):
                    nisa.nc_matmul(
                        dst=acc,
                        stationary=a[k][:, m * 128 : (m + 1) * 128],
                        moving=b[k][:, j * 512 : (j + 1) * 512],
                    )
                res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
                nisa.tensor_copy(dst=res, src=acc)
                col = n * {width} + j * 512
                nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, col : col + 512], src=res)
    return out
"""
LIST = (
    "b = [nl.ndarray((128, {width}), dtype=rhs.dtype, buffer=nl.sbuf{address}) for i in range(KT)]"
)


def _kernel(kernel_file, *, hoisted: bool, width: int = 512, address: str = "", name: str = "k.py"):
    alloc = LIST.format(width=width, address=address)
    source = STREAM.format(
        width=width,
        hoisted=alloc if hoisted else "",
        per_iteration="" if hoisted else alloc,
    )
    path, _ = kernel_file(source, name=name)
    return path


def _inputs(k: int = 1024, m: int = 512, n: int = 4096) -> dict[str, np.ndarray]:
    return {"lhsT": np.zeros((k, m), BF16), "rhs": np.zeros((k, n), BF16)}


def _moving_generations(run) -> dict[int, list]:
    """The moving tiles (the site allocating lists more than once), by generation."""
    sites: dict[tuple, dict[int, list]] = {}
    for a in run.allocations:
        if a.kind == "sbuf":
            sites.setdefault(a.site, {}).setdefault(a.generation, []).append(a)
    return max(sites.values(), key=lambda gens: len(gens[0]) if len(gens) > 1 else 0)


def test_a_list_allocated_per_iteration_overlaps_loads_with_compute(kernel_file):
    per_iteration = run_kernel(
        _kernel(kernel_file, hoisted=False), _inputs(), compute=False, mac_count=None
    )
    hoisted = run_kernel(_kernel(kernel_file, hoisted=True, name="h.py"), _inputs(), compute=False)
    # Hoisted, the next block's loads wait for this block's matmuls.
    assert per_iteration.profile["total_time"] < 0.9 * hoisted.profile["total_time"]


def test_a_generation_takes_over_an_older_generation_tile_by_tile(kernel_file):
    run = run_kernel(_kernel(kernel_file, hoisted=False), _inputs(), compute=False)
    gens = _moving_generations(run)
    assert len(gens) == 8 and all(len(g) == 8 for g in gens.values())
    depth = DEFAULT_PARAMS.rotation_depth
    for g, tiles in gens.items():
        if g < depth:
            assert all(t.reuses == () for t in tiles)  # fresh copies first
        else:
            # Tile i reuses tile i of the generation `depth` back, never a
            # tile of its own generation (which would be a false WAR chain).
            assert [t.reuses for t in tiles] == [(old.alloc_id,) for old in gens[g - depth]]


def test_copies_are_granted_as_capacity_permits(kernel_file):
    # 8 tiles x 4096 bf16 columns = 64 KiB per generation next to 8 KiB of
    # stationary tiles: a second copy fits in 192 KiB, a third does not.
    run = run_kernel(
        _kernel(kernel_file, hoisted=False, width=4096),
        _inputs(k=1024, m=512, n=16384),
        compute=False,
    )
    by_gen = _moving_generations(run)
    assert [t.reuses for t in by_gen[2]] == [(old.alloc_id,) for old in by_gen[0]]
    roomy = dataclasses.replace(DEFAULT_PARAMS, sbuf_partition_bytes=320 * 1024)
    run = run_kernel(
        _kernel(kernel_file, hoisted=False, width=4096, name="r.py"),
        _inputs(k=1024, m=512, n=16384),
        compute=False,
        params=roomy,
    )
    by_gen = _moving_generations(run)
    assert all(t.reuses == () for t in by_gen[2])  # a third copy fits
    assert [t.reuses for t in by_gen[3]] == [(old.alloc_id,) for old in by_gen[0]]


def test_hand_placed_addresses_skip_the_rotation(kernel_file):
    placed = run_kernel(
        _kernel(kernel_file, hoisted=False, address=", address=(0, 65536 + i * 1024)", name="p.py"),
        _inputs(),
        compute=False,
    )
    rotated = run_kernel(_kernel(kernel_file, hoisted=False), _inputs(), compute=False)
    moving = [a for a in placed.allocations if a.address is not None]
    # Tile i of every generation sits at the same address: it waits for
    # tile i of the previous generation, so a block's loads wait for the
    # previous block's matmuls.
    assert [a.reuses for a in moving[8:]] == [(old.alloc_id,) for old in moving[:-8]]
    # On this kernel the serialised loads cost about a fifth of the time (1.19x with
    # the linear TensorE warm-up ramp, 1.22x with the older 2x step).
    assert placed.profile["total_time"] > 1.15 * rotated.profile["total_time"]
