import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def dma_transpose_kernel(x):
    # x is [F, 128]: the DMA engine lands it transposed as a [128, F] tile.
    F, P = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
