"""silu(x) = x * sigmoid(x), fp32, in the beta-1 API: one row tile, column chunk by chunk."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def silu(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    chunk = 1024 if cols % 1024 == 0 else cols
    for r in nl.affine_range(rows // 128):
        for c in nl.affine_range(cols // chunk):
            tile = nl.load(x[r * 128 : (r + 1) * 128, c * chunk : (c + 1) * chunk])
            gate = nl.sigmoid(tile)
            nl.store(
                out[r * 128 : (r + 1) * 128, c * chunk : (c + 1) * chunk],
                value=nl.multiply(tile, gate),
            )
    return out
