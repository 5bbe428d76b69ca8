import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc import nki


@nki.jit
def small_matmul(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        a = nl.load(lhsT[k * 128 : (k + 1) * 128, 0:128])
        b = nl.load(rhs[k * 128 : (k + 1) * 128, 0:512])
        acc += nisa.nc_matmul(a, b)
    res = nl.copy(acc, dtype=out.dtype)
    nl.store(out[0:128, 0:512], value=res)
    return out
