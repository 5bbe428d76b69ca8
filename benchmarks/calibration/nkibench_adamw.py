"""One AdamW step, fp32, in the beta-1 API; the row count need not be a multiple of 128
(the last tile is masked)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def adamw(theta, g, m, v):
    rows, cols = theta.shape
    out = nl.ndarray((rows, cols), dtype=theta.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + 127) // 128):
        keep = t * 128 + i_p < rows
        rows_at = t * 128 + i_p
        th = nl.load(theta[rows_at, i_f], mask=keep)
        gr = nl.load(g[rows_at, i_f], mask=keep)
        mo = nl.load(m[rows_at, i_f], mask=keep)
        ve = nl.load(v[rows_at, i_f], mask=keep)
        decayed = nl.multiply(th, 1.0 - 1e-5, mask=keep)
        m_t = nl.add(nl.multiply(mo, 0.9, mask=keep), nl.multiply(gr, 0.1, mask=keep), mask=keep)
        g2 = nl.multiply(gr, gr, mask=keep)
        v_t = nl.add(
            nl.multiply(ve, 0.999, mask=keep), nl.multiply(g2, 0.001, mask=keep), mask=keep
        )
        # |v_hat|: the workload draws v from [-1, 1); NKIBench's v is non-negative.
        root = nl.sqrt(nl.abs(nl.multiply(v_t, 1000.0, mask=keep), mask=keep), mask=keep)
        step = nl.divide(
            nl.multiply(m_t, 0.01, mask=keep), nl.add(root, 1e-8, mask=keep), mask=keep
        )
        nl.store(out[rows_at, i_f], value=nl.subtract(decayed, step, mask=keep), mask=keep)
    return out
