"""lhsT.T @ rhs in the beta-1 API, indexed the way most public beta-1 kernels index:
nl.arange / nl.mgrid affine expressions instead of slices. Same instructions as
matmul_tiled.py (and as the current-API matmul_basic.py)."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_beta1_arange(lhsT, rhs):
    k_total, m_total = lhsT.shape
    _, n_total = rhs.shape
    out = nl.ndarray((m_total, n_total), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    i_k, i_m = nl.mgrid[0:128, 0:128]
    j_k, j_n = nl.mgrid[0:128, 0:512]
    for m in nl.affine_range(m_total // 128):
        for n in nl.affine_range(n_total // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_total // 128):
                a = nl.load(lhsT[k * 128 + i_k, m * 128 + i_m])
                b = nl.load(rhs[k * 128 + j_k, n * 512 + j_n])
                acc += nl.matmul(a, b, transpose_x=True)
            result = nisa.tensor_copy(acc, dtype=out.dtype)
            nl.store(out[m * 128 + j_k, n * 512 + j_n], value=result)
    return out
