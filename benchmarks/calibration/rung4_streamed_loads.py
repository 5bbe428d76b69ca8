"""Ladder rung 4: operands streamed through double buffers inside the loop nest.

For each 512-column block of rhs and each 512-column block of lhsT the
kernel loads the K x 512 panels into one of two buffers (alternating), then
accumulates every 128 x 512 output tile of the block over all of K in one
PSUM tile (a single level of K) and drains it.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rung4(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, MB, NB = K // 128, M // 512, N // 512
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    rhs_bufs = [nl.ndarray((128, KT, 512), dtype=rhs.dtype, buffer=nl.sbuf) for _ in range(2)]
    lhsT_bufs = [nl.ndarray((128, KT, 512), dtype=lhsT.dtype, buffer=nl.sbuf) for _ in range(2)]
    for n in nl.affine_range(NB):
        moving = rhs_bufs[n % 2]
        for k in nl.affine_range(KT):
            nisa.dma_copy(
                dst=moving[:, k, :], src=rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512]
            )
        for mb in nl.affine_range(MB):
            stationary = lhsT_bufs[(n * MB + mb) % 2]
            for k in nl.affine_range(KT):
                nisa.dma_copy(
                    dst=stationary[:, k, :],
                    src=lhsT[k * 128 : (k + 1) * 128, mb * 512 : (mb + 1) * 512],
                )
            for m in nl.affine_range(4):
                acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(KT):
                    nisa.nc_matmul(
                        dst=acc,
                        stationary=stationary[:, k, m * 128 : (m + 1) * 128],
                        moving=moving[:, k, :],
                    )
                res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
                nisa.tensor_copy(dst=res, src=acc)
                row = mb * 512 + m * 128
                nisa.dma_copy(dst=out[row : row + 128, n * 512 : (n + 1) * 512], src=res)
    return out
