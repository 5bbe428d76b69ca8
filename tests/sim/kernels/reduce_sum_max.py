import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def row_stats(x):
    # Per-row sum over both free axes of a [128, G, F] block, and the max of
    # each group of F.
    P, G, F = x.shape
    sums = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    maxes = nl.ndarray((P, G), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, G, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    flat = nl.ndarray((P, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=flat, op=nl.add, data=t, axis=(1, 2), keepdims=True)
    s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=flat[:, 0, :])
    m = nl.ndarray((P, G), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=-1)
    nisa.dma_copy(dst=sums, src=s)
    nisa.dma_copy(dst=maxes, src=m)
    return sums, maxes
