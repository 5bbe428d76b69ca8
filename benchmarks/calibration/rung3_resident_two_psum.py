"""Ladder rung 3: rung 2 with a double-buffered accumulator.

Two PSUM tiles alternate by output tile, so one tile's drain and the next
tile's memset overlap the matmuls accumulating into the other.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rung3(lhsT, rhs):
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
    accs = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(2)]
    for m in nl.affine_range(MT):
        for n in nl.affine_range(NT):
            acc = accs[(m * NT + n) % 2]
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
