"""A [1, F] row broadcast across 128 partitions, then multiplied into a [128, F] tile
(the NKI Mamba tutorial's B and C rows): F = 512 fits one PSUM bank, F = 1024 does not.
With ``square_too`` the result is also multiplied by x, two fp32 tiles in SBUF."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def broadcast_rows(x, row, square_too=False):
    cols = x.shape[1]
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    x_tile = nl.load(x)
    r = nl.load(row)
    y = nisa.tensor_tensor(x_tile, r.broadcast_to((128, cols)), op=nl.multiply)
    if square_too:
        y = nisa.tensor_tensor(y, x_tile, op=nl.multiply)
    nl.store(out, y)
    return out
