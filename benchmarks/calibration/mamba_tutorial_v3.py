"""The NKI fused Mamba tutorial's third version, written here after its structure, fp32,
beta-1 API (aws-neuron/nki-samples src/nki_samples/tutorials/fused_mamba/
mamba_nki_kernels.py @9b545f9, ``mamba_v3``; measured latencies in aws-neuron/
aws-neuron-sdk nki/guides/tutorials/fused_mamba.rst @4373fac). The second version with
the sequence tiled by 512 inside each state (an unrolled ``static_range``): each piece's
exp, products and scan, the scan started from the previous piece's last column (kept
in a [128, 1] tile), the product with C written to a PSUM tile and added into the
accumulator's slice. Batch 1."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

PIECE = 512


@nki.jit
def mamba_seq_tiled(delta, u, a, b, c):
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
            carry = nl.zeros((128, 1), dtype=delta.dtype)
            for p in nl.static_range(length // PIECE):
                cols = slice(p * PIECE, (p + 1) * PIECE)
                decay = nisa.activation(op=nl.exp, data=d_tile[0:128, cols], scale=a_col)
                b_row = nl.load(b[s : s + 1, cols])
                du = nisa.tensor_tensor(d_tile[0:128, cols], u_tile[0:128, cols], op=nl.multiply)
                dbu = nisa.tensor_tensor(du, b_row.broadcast_to((128, PIECE)), op=nl.multiply)
                h = nisa.tensor_tensor_scan(decay, dbu, initial=carry, op0=np.multiply, op1=np.add)
                carry[...] = h[0:128, PIECE - 1]
                c_row = nl.load(c[s : s + 1, cols])
                y = nl.ndarray((128, PIECE), dtype=delta.dtype, buffer=nl.psum)
                y[...] = nisa.tensor_tensor(h, c_row.broadcast_to((128, PIECE)), op=nl.multiply)
                total[0:128, cols] += y
        nl.store(out[rows, 0:length], total[0:128, 0:length])
    return out
