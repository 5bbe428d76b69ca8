"""Ladder rung 2: operands resident in SBUF, one PSUM tile for every output tile.

Both operands are loaded once, in full-width rows, before any matmul. Each
output tile zeroes the one PSUM accumulator, accumulates over K and drains
it, so the next tile's memset waits for this tile's drain: zeroing,
matmuls and drain run one after another.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rung2(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, MT, NT = K // 128, M // 128, N // 512
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((128, KT, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray((128, KT, N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=a[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, :])
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=b[:, k, :], src=rhs[k * 128 : (k + 1) * 128, :])
    result = nl.ndarray((128, MT, N), dtype=out.dtype, buffer=nl.sbuf)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for m in nl.affine_range(MT):
        for n in nl.affine_range(NT):
            nisa.memset(dst=acc, value=0.0)
            for k in nl.affine_range(KT):
                nisa.nc_matmul(
                    dst=acc,
                    stationary=a[:, k, m * 128 : (m + 1) * 128],
                    moving=b[:, k, n * 512 : (n + 1) * 512],
                )
            nisa.tensor_copy(dst=result[:, m, n * 512 : (n + 1) * 512], src=acc)
        nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, :], src=result[:, m, :])
    return out
