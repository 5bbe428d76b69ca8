"""Batched lhs[b] @ rhs[b] with a small K, fp32, in the beta-1 API, after the structure of
NKIBench's baseline kernel (the one its public profile measured): per batch and
1024-column chunk of rhs, load the chunk; per 1024-row group of lhs, load its eight
128-row tiles and transpose each on TensorE (nc_matmul against an identity) into a
K x 1024 block; multiply each 128-row slice against the chunk, 512 columns per PSUM
tile, copy into a 128 x 1024 row and store it. Every intermediate is a block of a
block array indexed by all its loops, as in the baseline, so each block is allocated
on its own from first use to last."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

CHUNK, GROUP, TILE_N = 1024, 1024, 512


@nki.jit
def bmm(lhs, rhs):
    batches, m_size, k_size = lhs.shape
    n_size = rhs.shape[2]
    out = nl.ndarray((batches, m_size, n_size), dtype=lhs.dtype, buffer=nl.shared_hbm)
    chunk, group = min(CHUNK, n_size), min(GROUP, m_size)
    chunks, groups = n_size // chunk, m_size // group
    tiles, tile_n = group // 128, min(TILE_N, chunk)
    halves = chunk // tile_n
    f32 = nl.float32
    identity = nl.ndarray((nl.par_dim(128), 128), dtype=f32, buffer=nl.sbuf)
    right = nl.ndarray((batches, chunks, nl.par_dim(k_size), chunk), dtype=f32)
    left = nl.ndarray((chunks, batches, groups, tiles, nl.par_dim(128), k_size), dtype=f32)
    flipped = nl.zeros(
        (batches, chunks, groups, tiles, nl.par_dim(k_size), 128), dtype=f32, buffer=nl.psum,
        lazy_initialization=True,
    )  # fmt: skip
    left_t = nl.ndarray((chunks, batches, groups, nl.par_dim(k_size), group), dtype=f32)
    product = nl.zeros(
        (batches, chunks, groups, tiles, halves, nl.par_dim(128), tile_n), dtype=f32,
        buffer=nl.psum, lazy_initialization=True,
    )  # fmt: skip
    rows = nl.ndarray((batches, groups, tiles, chunks, nl.par_dim(128), chunk), dtype=f32)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    i_k = nl.arange(k_size)[:, None]
    j_k = nl.arange(k_size)[None, :]
    i_c = nl.arange(chunk)[None, :]
    i_n = nl.arange(tile_n)[None, :]
    identity[i_p, i_f] = nl.load(nl.shared_constant(np.identity(128, dtype=np.float32)))
    for b in nl.affine_range(batches):
        for n in nl.affine_range(chunks):
            right[b, n, i_k, i_c] = nl.load(rhs[b, i_k, n * chunk + i_c])
            for g in nl.affine_range(groups):
                for t in nl.affine_range(tiles):
                    left[n, b, g, t, i_p, j_k] = nl.load(lhs[b, g * group + t * 128 + i_p, j_k])
                    flipped[b, n, g, t, i_k, i_f] = nisa.nc_matmul(
                        left[n, b, g, t, i_p, j_k], identity, is_moving_onezero=True,
                        is_transpose=True,
                    )  # fmt: skip
                    left_t[n, b, g, i_k, t * 128 + i_f] = nl.copy(flipped[b, n, g, t, i_k, i_f])
                for t in nl.affine_range(tiles):
                    for h in nl.affine_range(halves):
                        product[b, n, g, t, h, i_p, i_n] = nisa.nc_matmul(
                            left_t[n, b, g, i_k, t * 128 + i_f], right[b, n, i_k, h * tile_n + i_n]
                        )
                        rows[b, g, t, n, i_p, h * tile_n + i_n] = nl.copy(
                            product[b, n, g, t, h, i_p, i_n]
                        )
                    nl.store(
                        out[b, g * group + t * 128 + i_p, n * chunk + i_c],
                        value=rows[b, g, t, n, i_p, i_c],
                    )
    return out
