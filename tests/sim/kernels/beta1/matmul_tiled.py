"""lhsT.T @ rhs in the beta-1 API: nl.load, nl.matmul(transpose_x=True), += into PSUM."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_beta1(lhsT, rhs):
    k_total, m_total = lhsT.shape
    _, n_total = rhs.shape
    out = nl.ndarray((m_total, n_total), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    tile_k, tile_m, tile_n = 128, 128, 512
    for m in nl.affine_range(m_total // tile_m):
        for n in nl.affine_range(n_total // tile_n):
            acc = nl.zeros((tile_m, tile_n), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_total // tile_k):
                a = nl.load(lhsT[k * tile_k : (k + 1) * tile_k, m * tile_m : (m + 1) * tile_m])
                b = nl.load(rhs[k * tile_k : (k + 1) * tile_k, n * tile_n : (n + 1) * tile_n])
                acc += nl.matmul(a, b, transpose_x=True)
            # A VectorE copy, as its current-API twin drains PSUM (nl.copy would go to ScalarE).
            result = nisa.tensor_copy(acc, dtype=out.dtype)
            nl.store(
                out[m * tile_m : (m + 1) * tile_m, n * tile_n : (n + 1) * tile_n], value=result
            )
    return out
