import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def late_then_early(big, small):
    # VectorE first copies a tile that arrives late (a large DMA), then one
    # that is ready early: only program order ties the second to the first.
    late = nl.ndarray((128, 8192), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=late, src=big)
    early = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=early, value=1.0)
    a = nl.ndarray((128, 8192), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=a, src=late)
    b = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=b, src=early)
    nisa.dma_copy(dst=big, src=a)
    nisa.dma_copy(dst=small, src=b)
    return big, small
