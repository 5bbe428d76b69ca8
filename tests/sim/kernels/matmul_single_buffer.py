import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_single_buffer(lhsT, rhs):
    # Same math as matmul_basic, but every tile lives in one buffer allocated
    # up front, so each load must wait for the matmul reading the previous one.
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            for k in nl.affine_range(K // 128):
                nisa.dma_copy(dst=a, src=lhsT[k * 128 : (k + 1) * 128, m * 128 : (m + 1) * 128])
                nisa.dma_copy(dst=b, src=rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b, accumulate=k > 0)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=res)
    return out
