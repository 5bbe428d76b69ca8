import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def partition_loads(x, first_rows, second_rows):
    # Two loads of the same bytes per partition, into partitions first_rows and
    # second_rows ((start, stop) each) of two tiles, then the stores of what they loaded.
    a0, a1 = first_rows
    b0, b1 = second_rows
    first = nl.ndarray((128, 4096), dtype=x.dtype, buffer=nl.sbuf)
    second = nl.ndarray((128, 4096), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=first[a0:a1, :], src=x[a0:a1, :])
    nisa.dma_copy(dst=second[b0:b1, :], src=x[b0:b1, :])
    out = nl.ndarray((a1 - a0 + b1 - b0, 4096), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[0 : a1 - a0, :], src=first[a0:a1, :])
    nisa.dma_copy(dst=out[a1 - a0 :, :], src=second[b0:b1, :])
    return out
