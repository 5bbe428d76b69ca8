"""Vector add a few partitions at a time, written here after the CS149 asst4 (Fall 2024,
Trn1) part 1 tiled kernel: ``rows`` consecutive elements land one per partition in a
(rows, 1) tile, so each step moves ``rows`` elements with three DMAs (two loads, one
store) around one VectorE add. ``rows=1`` is the handout's first version, 128 its fix.
Beta-1 API."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vecadd_rows(a_vec, b_vec, rows=1):
    length = a_vec.shape[0]
    out = nl.ndarray((length,), dtype=a_vec.dtype, buffer=nl.hbm)
    for step in nl.affine_range(length // rows):
        lo, hi = step * rows, (step + 1) * rows
        left = nl.ndarray((rows, 1), dtype=a_vec.dtype, buffer=nl.sbuf)
        right = nl.ndarray((rows, 1), dtype=b_vec.dtype, buffer=nl.sbuf)
        left[...] = nl.load(a_vec[lo:hi])
        right[...] = nl.load(b_vec[lo:hi])
        nl.store(out[lo:hi], value=nl.add(left, right))
    return out
