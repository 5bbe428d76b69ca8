"""A Mamba selective scan (states summed) in the beta-1 API, the sequence cut into 512-wide
chunks whose scans chain through a carried [128, 1] state (tensor_tensor_scan's
initial), B and C rows broadcast across partitions, the per-state result accumulated
through a PSUM tile. delta, u: [channels, seq]; a: [channels, states]; b, c:
[states, seq]."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np

CHUNK = 512


@nki.jit
def mamba(delta, u, a, b, c):
    channels, seq = delta.shape
    states = a.shape[1]
    out = nl.ndarray((channels, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(channels // 128):
        rows = nl.ds(t * 128, 128)
        total = nl.zeros((nl.par_dim(128), seq), dtype=nl.float32)
        d_tile, u_tile = nl.load(delta[rows, :]), nl.load(u[rows, :])
        for s in nl.affine_range(states):
            a_col = nl.load(a[rows, s])
            carry = nl.zeros((128, 1), dtype=nl.float32)
            for j in nl.static_range(seq // CHUNK):
                cols = nl.ds(j * CHUNK, CHUNK)
                decay = nisa.activation(op=nl.exp, data=d_tile[:, cols], scale=a_col)
                du = nisa.tensor_tensor(d_tile[:, cols], u_tile[:, cols], op=nl.multiply)
                b_row = nl.load(b[s : s + 1, cols]).broadcast_to((128, CHUNK))
                drive = nisa.tensor_tensor(du, b_row, op=nl.multiply)
                h = nisa.tensor_tensor_scan(
                    decay, drive, initial=carry, op0=np.multiply, op1=np.add
                )
                carry[...] = h[:, CHUNK - 1]
                c_row = nl.load(c[s : s + 1, cols]).broadcast_to((128, CHUNK))
                y = nl.ndarray((128, CHUNK), dtype=nl.float32, buffer=nl.psum)
                y[...] = nisa.tensor_tensor(h, c_row, op=nl.multiply)
                total[:, cols] += y
        nl.store(out[rows, :], value=total)
    return out
