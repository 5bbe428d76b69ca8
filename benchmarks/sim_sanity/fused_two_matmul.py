"""out = (lhsT.T @ rhs) @ w, both matmuls in one kernel (a sanity kernel, no hardware figure).

For each 128-row block of the result, the first product is computed
transposed, T^T = rhs.T @ lhsT (N x 128, accumulated over K in PSUM one
128 x 128 tile at a time), drained to SBUF as bf16, and used at once as the
stationary operand of the second matmul, which accumulates over N into a
128 x 512 PSUM tile per 512 output columns. ``fused=False`` instead stores
the first product to HBM and reloads it, as two separate kernels would.
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def fused_two_matmul(lhsT, rhs, w, fused=True):
    K, M = lhsT.shape
    _, N = rhs.shape
    _, Q = w.shape
    KT, NT, QT = K // 128, N // 128, Q // 512
    out = nl.ndarray((M, Q), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray((N, M), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray((128, KT, N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=b[:, k, :], src=rhs[k * 128 : (k + 1) * 128, :])
    wt = nl.ndarray((128, NT, Q), dtype=w.dtype, buffer=nl.sbuf)
    for n in nl.affine_range(NT):
        nisa.dma_copy(dst=wt[:, n, :], src=w[n * 128 : (n + 1) * 128, :])
    for m in nl.affine_range(M // 128):
        a = nl.ndarray((128, KT, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            nisa.dma_copy(
                dst=a[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128]
            )
        tt = nl.ndarray((128, NT, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        for n in nl.affine_range(NT):
            acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                nisa.nc_matmul(
                    dst=acc, stationary=b[:, k, n * 128 : (n + 1) * 128], moving=a[:, k, :]
                )
            nisa.tensor_copy(dst=tt[:, n, :], src=acc)
        if not fused:
            for n in nl.affine_range(NT):
                nisa.dma_copy(
                    dst=scratch[n * 128 : (n + 1) * 128, m * 128 : (m + 1) * 128], src=tt[:, n, :]
                )
            tt = nl.ndarray((128, NT, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
            for n in nl.affine_range(NT):
                nisa.dma_copy(
                    dst=tt[:, n, :], src=scratch[n * 128 : (n + 1) * 128, m * 128 : (m + 1) * 128]
                )
        res = nl.ndarray((128, Q), dtype=lhsT.dtype, buffer=nl.sbuf)
        for q in nl.affine_range(QT):
            acc2 = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for n in nl.affine_range(NT):
                nisa.nc_matmul(
                    dst=acc2, stationary=tt[:, n, :], moving=wt[:, n, q * 512 : (q + 1) * 512]
                )
            nisa.tensor_copy(dst=res[:, q * 512 : (q + 1) * 512], src=acc2)
        nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, :], src=res)
    return out
