"""The NKI fused Mamba tutorial's second version, written here after its structure, fp32,
beta-1 API (aws-neuron/nki-samples src/nki_samples/tutorials/fused_mamba/
mamba_nki_kernels.py @9b545f9, ``mamba_v2``; the tutorial's text, aws-neuron/
aws-neuron-sdk nki/guides/tutorials/fused_mamba.rst @4373fac, gives its measured
latencies). The first version's loops swapped: per 128-channel tile, delta and u are
loaded once and reused across the states; per state, the state's A column, B and C rows
are loaded, exp(delta * A) runs on ScalarE, delta * u * B on VectorE, the scan along the
sequence (tensor_tensor_scan), times C, summed into the tile's accumulator; then the
tile is stored. Batch 1, so the batch loop is left out."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def mamba_reuse(delta, u, a, b, c):
    channels, length = delta.shape
    states = a.shape[1]
    out = nl.ndarray((channels, length), dtype=delta.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(channels // 128):
        rows = slice(t * 128, (t + 1) * 128)
        total = nl.zeros((nl.par_dim(128), length), dtype=delta.dtype)
        d_tile = nl.load(delta[rows, 0:length])
        u_tile = nl.load(u[rows, 0:length])
        for s in nl.affine_range(states):
            a_col = nl.load(a[rows, s])
            decay = nisa.activation(op=nl.exp, data=d_tile, scale=a_col)
            b_row = nl.load(b[s : s + 1, 0:length])
            du = nisa.tensor_tensor(d_tile, u_tile, op=nl.multiply)
            dbu = nisa.tensor_tensor(du, b_row.broadcast_to((128, length)), op=nl.multiply)
            h = nisa.tensor_tensor_scan(decay, dbu, initial=0, op0=np.multiply, op1=np.add)
            c_row = nl.load(c[s : s + 1, 0:length])
            y = nisa.tensor_tensor(h, c_row.broadcast_to((128, length)), op=nl.multiply)
            total[0:128, 0:length] += y
        nl.store(out[rows, 0:length], total[0:128, 0:length])
    return out
