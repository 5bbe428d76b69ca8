"""RMSNorm in the beta-1 API: nl.mgrid, ISA calls that return tiles, a non-tensor argument."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm_beta1(x, weight, eps=1e-6, **options):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    ix = nl.mgrid[0:128, 0:cols]
    w = nl.load(weight.reshape((1, cols))[0:1, 0:cols])
    for t in nl.affine_range(rows // 128):
        tile = nl.load(x[t * 128 + ix.p, ix.x])
        sq = nisa.activation(op=nl.square, data=tile)
        ms = nisa.tensor_reduce(op=nl.add, data=sq, axis=[1], keepdims=True)
        inv = nl.rsqrt(nl.add(nl.multiply(ms, 1.0 / cols), eps))
        normed = nl.multiply(tile, inv)
        scaled = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        scaled[...] = nl.multiply(normed, w)
        nl.store(out[t * 128 + ix.p, ix.x], value=scaled)
    return out
