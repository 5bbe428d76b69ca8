import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose_kernel(x):
    # Transpose a [P, F] matrix tile by tile on the TensorE (F, P multiples of 128).
    P, F = x.shape
    out = nl.ndarray((F, P), dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(P // 128):
        for j in nl.affine_range(F // 128):
            t = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, j * 128 : (j + 1) * 128])
            tp = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_transpose(dst=tp, data=t)
            r = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=r, src=tp)
            nisa.dma_copy(dst=out[j * 128 : (j + 1) * 128, i * 128 : (i + 1) * 128], src=r)
    return out
