"""lhs @ rhs, fp32, in the beta-1 API, the plain way: every output tile walks K, loading an
lhs tile (transposed on TensorE by nl.matmul) and an rhs tile each step."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def matmul(lhs, rhs):
    m_size, k_size = lhs.shape
    n_size = rhs.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=lhs.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(m_size // 128):
        for n in nl.affine_range(n_size // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // 128):
                a = nl.load(lhs[m * 128 : (m + 1) * 128, k * 128 : (k + 1) * 128])
                b = nl.load(rhs[k * 128 : (k + 1) * 128, n * 512 : (n + 1) * 512])
                acc += nl.matmul(a, b)
            nl.store(out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], value=nl.copy(acc))
    return out
