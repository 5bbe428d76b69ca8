"""Batched lhs[b] @ rhs[b] with a small K, fp32, in the beta-1 API: each batch's rhs stays
in SBUF, each lhs row tile is transposed by nl.matmul and meets every rhs chunk."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def bmm(lhs, rhs):
    batches, m_size, k_size = lhs.shape
    n_size = rhs.shape[2]
    out = nl.ndarray((batches, m_size, n_size), dtype=lhs.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(batches):
        right = nl.load(rhs[b])
        for m in nl.affine_range(m_size // 128):
            left = nl.load(lhs[b, m * 128 : (m + 1) * 128, :])
            for n in nl.affine_range(n_size // 512):
                prod = nl.matmul(left, right[:, n * 512 : (n + 1) * 512])
                nl.store(
                    out[b, m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], value=nl.copy(prod)
                )
    return out
