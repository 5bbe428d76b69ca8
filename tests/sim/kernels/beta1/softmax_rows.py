"""Row softmax in the beta-1 API: nl.arange index expressions with a mask for the tail."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def softmax_beta1(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + 127) // 128):
        valid = t * 128 + i_p < rows
        tile = nl.load(x[t * 128 + i_p, i_f], mask=valid)
        top = nl.max(tile, axis=1, keepdims=True, mask=valid)
        shifted = nl.subtract(tile, top, mask=valid)
        e = nl.exp(shifted, mask=valid)
        total = nl.sum(e, axis=1, keepdims=True, mask=valid)
        nl.store(out[t * 128 + i_p, i_f], value=nl.divide(e, total, mask=valid), mask=valid)
    return out
