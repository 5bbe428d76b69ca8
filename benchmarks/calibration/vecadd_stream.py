"""Vector add in (128, free) tiles, written here after the CS149 asst4 (Fall 2024, Trn1)
part 1 streaming kernel: the vectors are viewed as (length / (128 * free), 128, free) and
each tile is two loads, one VectorE add and one store, so ``free`` elements ride in every
partition of each DMA. The handout starts at ``free=2`` and asks for the largest that
divides the length. Beta-1 API."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vecadd_stream(a_vec, b_vec, free=2):
    length = a_vec.shape[0]
    parts = nl.tile_size.pmax
    tiles = length // (parts * free)
    a_view = a_vec.reshape((tiles, parts, free))
    b_view = b_vec.reshape((tiles, parts, free))
    out = nl.ndarray((tiles, parts, free), dtype=a_vec.dtype, buffer=nl.hbm)
    for t in nl.affine_range(tiles):
        left = nl.ndarray((parts, free), dtype=a_vec.dtype, buffer=nl.sbuf)
        right = nl.ndarray((parts, free), dtype=b_vec.dtype, buffer=nl.sbuf)
        left[...] = nl.load(a_view[t])
        right[...] = nl.load(b_view[t])
        nl.store(out[t], value=nl.add(left, right))
    return out.reshape((length,))
