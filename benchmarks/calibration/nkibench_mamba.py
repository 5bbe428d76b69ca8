"""A Mamba selective scan (states summed), fp32, in the beta-1 API, after the structure of
NKIBench's baseline kernel (the one its public profile measured, itself the NKI fused
Mamba tutorial's first version): for every state and 128-channel tile, load delta, u and
the state's A column, B and C rows; exp(delta * A) on ScalarE; delta * u * B (B
broadcast across partitions) on VectorE; the scan deltaA * h + deltaBu along the
sequence (tensor_tensor_scan); times C, summed into one accumulator per channel tile
over the states; then store."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def mamba(delta, u, a, b, c):
    channels, length = delta.shape
    states = a.shape[1]
    out = nl.ndarray((channels, length), dtype=delta.dtype, buffer=nl.shared_hbm)
    tiles = channels // 128
    total = nl.zeros((tiles, nl.par_dim(128), length), dtype=delta.dtype)
    for s in nl.affine_range(states):
        for t in nl.affine_range(tiles):
            rows = slice(t * 128, (t + 1) * 128)
            d_tile = nl.load(delta[rows, 0:length])
            a_col = nl.load(a[rows, s])
            decay = nisa.activation(op=nl.exp, data=d_tile, scale=a_col)
            u_tile = nl.load(u[rows, 0:length])
            b_row = nl.load(b[s : s + 1, 0:length])
            du = nisa.tensor_tensor(d_tile, u_tile, op=nl.multiply)
            dbu = nisa.tensor_tensor(du, b_row.broadcast_to((128, length)), op=nl.multiply)
            h = nisa.tensor_tensor_scan(decay, dbu, initial=0, op0=np.multiply, op1=np.add)
            c_row = nl.load(c[s : s + 1, 0:length])
            y = nisa.tensor_tensor(h, c_row.broadcast_to((128, length)), op=nl.multiply)
            total[t, 0:128, 0:length] += y
    for t in nl.affine_range(tiles):
        nl.store(out[t * 128 : (t + 1) * 128, 0:length], total[t, 0:128, 0:length])
    return out
