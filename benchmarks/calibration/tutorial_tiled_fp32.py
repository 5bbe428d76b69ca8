"""The NKI tutorial's tiled matmul (fp32 inputs): loads inside the K loop.

Every 128 x 512 output tile zeroes a PSUM tile, then for each K tile loads
its two operand tiles (allocated in the loop body, so the compiler can
rotate them) and accumulates; the result is copied to SBUF and stored.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tutorial_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.memset(dst=acc, value=0.0)
            for k in nl.affine_range(K // 128):
                stationary = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=stationary, src=lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128]
                )
                moving = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=moving, src=rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=stationary, moving=moving)
            res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=res)
    return out
