"""The NKI tutorial's matmul with hoisted loads (fp32 inputs).

For each 128-column block of lhsT the K x 128 panel is loaded once, as a
list of K tiles allocated together; for each 512-column block of rhs the
K x 512 panel is loaded the same way and reused by the block's K
accumulation. The panels are separate tiles, so the compiler can recycle
them one by one.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tutorial_hoisted(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        stationary = [nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf) for _ in range(KT)]
        for k in nl.affine_range(KT):
            nisa.dma_copy(
                dst=stationary[k], src=lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128]
            )
        for n in nl.affine_range(N // 512):
            moving = [nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf) for _ in range(KT)]
            for k in nl.affine_range(KT):
                nisa.dma_copy(
                    dst=moving[k], src=rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512]
                )
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.memset(dst=acc, value=0.0)
            for k in nl.affine_range(KT):
                nisa.nc_matmul(dst=acc, stationary=stationary[k], moving=moving[k])
            res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=res)
    return out
