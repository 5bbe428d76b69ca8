import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_blocked(lhsT, rhs):
    # All of lhsT stays in SBUF (loaded in full-width rows); each rhs column
    # block is loaded once and used for every m. Needs K * M * 2 / 128 bytes
    # of SBUF per partition (64 KiB at 2048^2 bf16).
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((128, KT, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=a[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, :])
    for n in nl.affine_range(N // 512):
        b = nl.ndarray((128, KT, 512), dtype=rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            nisa.dma_copy(dst=b[:, k, :], src=rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512])
        for m in nl.affine_range(M // 128):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                nisa.nc_matmul(
                    dst=acc, stationary=a[:, k, m * 128 : (m + 1) * 128], moving=b[:, k, :]
                )
            res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=res)
    return out
