"""x @ w + (x @ a) @ b (a LoRA-adapted linear layer), fp32, in the beta-1 API, after the
structure of NKIBench's baseline kernel (the one its public profile measured). All of
it is computed transposed, 512 rows of x at a time, each x tile transposed on TensorE
(nc_matmul against an identity). The low-rank part: (x @ a)^T accumulated over K in
PSUM per 512-row group, copied out, then (x @ a @ b)^T one 128 x 512 tile at a time,
copied out. The main part, per 1024 output columns: K in four quarters (a sequential
loop); per quarter, load that slice of w, transpose the matching x tiles, accumulate
over the quarter in PSUM and fold the quarters together in SBUF (loop_reduce). Then
add the two parts and transpose every 128 x 128 tile back for the store.

The x tiles of a pass are loaded into one block array indexed by the pass's loops, as
the public kernel's are (its block arrays v9 and v18, NKIBench/kernels/
lora_M4096_N12288_K5120_R128_0.py @2dbeab4): the allocation form decides how many loads
may be in flight, and a tile allocated in the loop body rotates three copies."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

GROUP, CHUNK, TILE_N = 512, 1024, 512
QUARTERS = 4


@nki.jit
def lora(x, w, a, b):
    rows, k_size = x.shape
    n_size, rank = w.shape[1], a.shape[1]
    out = nl.ndarray((rows, n_size), dtype=x.dtype, buffer=nl.shared_hbm)
    kt, groups, chunks = k_size // 128, rows // GROUP, n_size // CHUNK
    identity = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    identity[i_p, i_f] = nl.load(nl.shared_constant(np.identity(128, dtype=np.float32)))
    low = _low_rank(x, a, b, identity, kt, groups, chunks, rank)
    units = CHUNK // 128
    for c in nl.affine_range(chunks):
        main = _main(x, w, identity, c, kt, groups)
        for g in nl.affine_range(groups):
            for u in nl.affine_range(units):
                both = nl.add(main[g, u], low[c, u, g])
                for s in nl.affine_range(GROUP // 128):
                    flipped = nisa.nc_matmul(
                        both[i_p, s * 128 + i_f], identity, is_moving_onezero=True,
                        is_transpose=True,
                    )  # fmt: skip
                    nl.store(
                        out[(g * GROUP // 128 + s) * 128 + i_p, (c * units + u) * 128 + i_f],
                        value=nl.copy(flipped),
                    )
    return out


def _x_transposed(x, identity, g, k0, count, per_load, dst):
    """dst[:, j, :] = x[rows of group g, K tile k0 + j]^T ([128, 512 rows]) for j < count,
    loading ``per_load`` K tiles of each 128-row tile at a time."""
    i_p, i_f = nl.mgrid[0:128, 0:128]
    p3 = nl.arange(128)[:, None, None]
    tiles = nl.ndarray(
        (count // per_load, GROUP // 128, nl.par_dim(128), per_load * 128), dtype=nl.float32
    )
    for part in nl.affine_range(count // per_load):
        for s in nl.affine_range(GROUP // 128):
            cols = 128 * nl.arange(per_load)[None, :, None] + nl.arange(128)[None, None, :]
            tiles[part, s, p3, cols] = nl.load(
                x[(g * GROUP // 128 + s) * 128 + p3, (k0 + part * per_load) * 128 + cols]
            )
            for j in nl.affine_range(per_load):
                flipped = nisa.nc_matmul(
                    tiles[part, s, i_p, j * 128 + i_f],
                    identity,
                    is_moving_onezero=True,
                    is_transpose=True,
                )
                dst[i_p, part * per_load + j, s * 128 + i_f] = nl.copy(flipped)


def _low_rank(x, a, b, identity, kt, groups, chunks, rank):
    """low[c, u, g] = ((x @ a) @ b)^T for output columns c * 1024 + u * 128 .., rows of group g."""
    i_p, i_g = nl.mgrid[0:128, 0:GROUP]
    a_tiles = nl.ndarray((kt, nl.par_dim(128), rank), dtype=nl.float32)
    for k in nl.affine_range(kt):
        a_tiles[k, i_p, nl.arange(rank)[None, :]] = nl.load(
            a[k * 128 + i_p, nl.arange(rank)[None, :]]
        )
    xa_t = nl.ndarray((groups, nl.par_dim(rank), GROUP), dtype=nl.float32)
    for g in nl.affine_range(groups):
        x_t = nl.ndarray((nl.par_dim(128), kt, GROUP), dtype=nl.float32)
        _x_transposed(x, identity, g, 0, kt, min(8, kt), x_t)
        acc = nl.zeros((nl.par_dim(rank), GROUP), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(kt):
            acc += nisa.nc_matmul(a_tiles[k, i_p, nl.arange(rank)[None, :]], x_t[i_p, k, i_g])
        xa_t[g, nl.arange(rank)[:, None], i_g] = nl.copy(acc)
    units = CHUNK // 128
    low = nl.ndarray((chunks, units, groups, nl.par_dim(128), GROUP), dtype=nl.float32)
    for c in nl.affine_range(chunks):
        b_chunk = nl.load(b[nl.arange(rank)[:, None], c * CHUNK + nl.arange(CHUNK)[None, :]])
        for g in nl.affine_range(groups):
            for u in nl.affine_range(units):
                product = nisa.nc_matmul(
                    b_chunk[nl.arange(rank)[:, None], u * 128 + nl.arange(128)[None, :]],
                    xa_t[g, nl.arange(rank)[:, None], i_g],
                )
                low[c, u, g, i_p, i_g] = nl.copy(product)
    return low


def _main(x, w, identity, c, kt, groups):
    """(x @ w)^T for output columns c * 1024 .., per 512-row group and 128-column unit."""
    i_p, i_g = nl.mgrid[0:128, 0:GROUP]
    units, per_quarter = CHUNK // 128, kt // QUARTERS
    summed = nl.ndarray((groups, units, nl.par_dim(128), GROUP), dtype=nl.float32)
    for quarter in nl.sequential_range(QUARTERS):
        w_tiles = nl.ndarray((per_quarter, nl.par_dim(128), CHUNK), dtype=nl.float32)
        for k in nl.affine_range(per_quarter):
            w_tiles[k, i_p, nl.arange(CHUNK)[None, :]] = nl.load(
                w[(quarter * per_quarter + k) * 128 + i_p, c * CHUNK + nl.arange(CHUNK)[None, :]]
            )
        for g in nl.affine_range(groups):
            x_t = nl.ndarray((nl.par_dim(128), per_quarter, GROUP), dtype=nl.float32)
            _x_transposed(x, identity, g, quarter * per_quarter, per_quarter, 5, x_t)
            for u in nl.affine_range(units):
                acc = nl.zeros((nl.par_dim(128), GROUP), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(per_quarter):
                    acc += nisa.nc_matmul(
                        w_tiles[k, i_p, u * 128 + nl.arange(128)[None, :]], x_t[i_p, k, i_g]
                    )
                summed[g, u, i_p, i_g] = nl.loop_reduce(acc, op=np.add, loop_indices=[quarter])
    return summed
