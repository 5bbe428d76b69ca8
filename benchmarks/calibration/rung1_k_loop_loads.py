"""Ladder rung 1: both operands loaded inside the K loop into one buffer each.

Each load must wait for the matmul that read the previous tile, so DMA and
TensorE take turns; every output tile reloads its operands.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rung1(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    stationary = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
    moving = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.memset(dst=acc, value=0.0)
            for k in nl.affine_range(K // 128):
                rows = slice(k * 128, (k + 1) * 128)
                nisa.dma_copy(dst=stationary, src=lhsT[rows, m * 128 : (m + 1) * 128])
                nisa.dma_copy(dst=moving, src=rhs[rows, n * 512 : (n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=stationary, moving=moving)
            res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=res)
    return out
