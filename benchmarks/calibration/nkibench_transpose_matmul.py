"""lhs.T @ rhs with lhs [K, M], rhs [K, N], fp32, in the beta-1 API, after the structure of
NKIBench's baseline kernel (the one its public profile measured): per 1024-row block
of M, load its K x 1024 slice of lhs as K / 128 tiles; per 1024-column block of N (the
last one partial, masked), load rhs's K x 1024 slice likewise; accumulate each
128 x 512 output tile over K in PSUM, copy it into a 128 x 1024 row of results and
store the row."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

BLOCK, TILE_N = 1024, 512


@nki.jit
def transpose_matmul(lhs, rhs):
    k_size, m_size = lhs.shape
    n_size = rhs.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=lhs.dtype, buffer=nl.shared_hbm)
    kt, mb, nb = k_size // 128, m_size // BLOCK, (n_size + BLOCK - 1) // BLOCK
    lhs_tiles = nl.ndarray((mb, kt, nl.par_dim(128), BLOCK), dtype=lhs.dtype, buffer=nl.sbuf)
    rhs_tiles = nl.ndarray((mb, nb, kt, nl.par_dim(128), BLOCK), dtype=rhs.dtype, buffer=nl.sbuf)
    acc = nl.zeros(
        (mb, nb, BLOCK // 128, 2, nl.par_dim(128), TILE_N),
        dtype=nl.float32,
        buffer=nl.psum,
        lazy_initialization=True,
    )
    rows = nl.ndarray((mb, BLOCK // 128, nb, nl.par_dim(128), BLOCK), dtype=lhs.dtype)
    i_p, i_b = nl.mgrid[0:128, 0:BLOCK]
    i_m = nl.arange(128)[None, :]
    i_n = nl.arange(TILE_N)[None, :]
    for m in nl.affine_range(mb):
        for k in nl.affine_range(kt):
            lhs_tiles[m, k, i_p, i_b] = nl.load(lhs[k * 128 + i_p, m * BLOCK + i_b])
        for n in nl.affine_range(nb):
            in_n = n * BLOCK + i_b < n_size
            for k in nl.affine_range(kt):
                rhs_tiles[m, n, k, i_p, i_b] = nl.load(
                    rhs[k * 128 + i_p, n * BLOCK + i_b], mask=in_n
                )
            for t in nl.affine_range(BLOCK // 128):
                for h in nl.affine_range(2):
                    valid = n * BLOCK + h * TILE_N + i_n < n_size
                    for k in nl.affine_range(kt):
                        acc[m, n, t, h, i_p, i_n] += nisa.nc_matmul(
                            lhs_tiles[m, k, i_p, t * 128 + i_m],
                            rhs_tiles[m, n, k, i_p, h * TILE_N + i_n],
                            mask=valid,
                        )
                    rows[m, t, n, i_p, h * TILE_N + i_n] = nl.copy(
                        acc[m, n, t, h, i_p, i_n], mask=valid
                    )
                nl.store(
                    out[(m * BLOCK // 128 + t) * 128 + i_p, n * BLOCK + i_b],
                    value=rows[m, t, n, i_p, i_b],
                    mask=in_n,
                )
    return out
