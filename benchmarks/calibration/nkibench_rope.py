"""Rotary embedding over a [d_head, S] layout, fp32, in the beta-1 API, after the
structure of NKIBench's baseline kernel (the one its public profile measured): per
512-column slice, load x (d_head partitions) and the cos/sin halves, copy x's second
half to partitions of its own (nl.copy: tensor_tensor operands share a base
partition), four VectorE multiplies and a subtract and an add into the two output
halves, one store."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

SLICE = 512


@nki.jit
def rope(x, cos, sin):
    d_head, length = x.shape
    half = d_head // 2
    out = nl.ndarray((d_head, length), dtype=x.dtype, buffer=nl.shared_hbm)
    top = nl.arange(half)[:, None]
    bottom = top + half
    rows = nl.arange(d_head)[:, None]
    cols = nl.arange(SLICE)[None, :]
    for start in range(0, length, SLICE):
        x_tile = nl.ndarray((d_head, SLICE), dtype=x.dtype, buffer=nl.sbuf)
        x_tile[rows, cols] = nl.load(x[rows, start + cols])
        c = nl.load(cos[top, start + cols])
        s = nl.load(sin[top, start + cols])
        first = x_tile[top, cols]
        second = nl.copy(x_tile[bottom, cols])
        first_cos = nisa.tensor_tensor(first, c, nl.multiply)
        second_cos = nisa.tensor_tensor(second, c, nl.multiply)
        first_sin = nisa.tensor_tensor(first, s, nl.multiply)
        second_sin = nisa.tensor_tensor(second, s, nl.multiply)
        result = nl.ndarray((d_head, SLICE), dtype=x.dtype, buffer=nl.sbuf)
        result[top, cols] = nisa.tensor_tensor(first_cos, second_sin, nl.subtract)
        result[bottom, cols] = nisa.tensor_tensor(second_cos, first_sin, nl.add)
        nl.store(out[rows, start + cols], value=result)
    return out
