"""Causal attention with an online softmax, beta-1 API: for each 128-query tile walk the
key tiles up to the diagonal, mask the diagonal tile with nisa.affine_select, keep a
running maximum and sum (rescaling the partial output when the maximum grows), and
divide once at the end. q, k, v are [seq, d] with d = 128."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

NEG = -30000.0


@nki.jit
def flash_causal(q, k, v):
    seq, d = q.shape
    out = nl.ndarray((seq, d), dtype=q.dtype, buffer=nl.shared_hbm)
    tiles = seq // 128
    i_q, i_k = nl.mgrid[0:128, 0:128]
    scale = 1.0 / float(np.sqrt(d))
    for t in nl.affine_range(tiles):
        q_t = nl.load_transpose2d(q[nl.ds(t * 128, 128), :])  # [d, 128 queries]
        running_max = nl.full((128, 1), NEG, dtype=nl.float32)
        running_sum = nl.zeros((128, 1), dtype=nl.float32)
        partial = nl.zeros((128, d), dtype=nl.float32)
        for s in nl.sequential_range(t + 1):
            k_t = nl.load_transpose2d(k[nl.ds(s * 128, 128), :])  # [d, 128 keys]
            scores = nl.multiply(nisa.nc_matmul(q_t, k_t), scale)
            if s == t:
                scores = nisa.affine_select(
                    pred=(i_q - i_k >= 0), on_true_tile=scores, on_false_value=NEG
                )
            new_max = nl.maximum(running_max, nl.max(scores, axis=1, keepdims=True))
            correction = nl.exp(nl.subtract(running_max, new_max))
            probs = nl.exp(nl.subtract(scores, new_max))
            running_sum[...] = nl.add(
                nl.multiply(running_sum, correction), nl.sum(probs, axis=1, keepdims=True)
            )
            contribution = nl.matmul(probs, nl.load(v[nl.ds(s * 128, 128), :]))
            partial[...] = nl.add(nl.multiply(partial, correction), contribution)
            running_max[...] = new_max
        nl.store(out[nl.ds(t * 128, 128), :], value=nl.divide(partial, running_sum))
    return out
