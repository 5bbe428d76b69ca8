import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def small_matmul(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=acc, value=0.0)
    for k in nl.affine_range(K // 128):
        a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[k * 128 : (k + 1) * 128, 0:128])
        b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
        # The wrong rows of rhs: block 1 - k instead of block k.
        nisa.dma_copy(dst=b, src=rhs[(1 - k) * 128 : (2 - k) * 128, 0:512])
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)
    res = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out[0:128, 0:512], src=res)
    return out
