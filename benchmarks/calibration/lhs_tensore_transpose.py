"""lhs @ rhs with the stationary operand transposed on TensorE through PSUM.

The loop nest of lhs_dma_transpose.py, but each lhs block is loaded in its
natural layout and every 128 x 128 tile is transposed by nc_transpose into
a PSUM tile allocated next to the matmul's accumulator, then copied to
SBUF by VectorE before the block's matmuls.
"""

import nki
import nki.isa as nisa
import nki.language as nl

BLOCK = 1024  # rows of M and of K per block


@nki.jit
def lhs_tensore_transpose(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    KT = BLOCK // 128
    MT = BLOCK // 128
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // BLOCK):
        total = nl.ndarray((128, MT, N), dtype=out.dtype, buffer=nl.sbuf)
        nisa.memset(dst=total, value=0.0)
        for n in nl.affine_range(N // 512):
            cols = slice(n * 512, (n + 1) * 512)
            for kb in nl.sequential_range(K // BLOCK):
                natural = nl.ndarray((128, MT, BLOCK), dtype=lhs.dtype, buffer=nl.sbuf)
                stationary = nl.ndarray((128, KT, BLOCK), dtype=lhs.dtype, buffer=nl.sbuf)
                moving = nl.ndarray((128, KT, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                for m in nl.affine_range(MT):
                    r = mb * BLOCK + m * 128
                    nisa.dma_copy(
                        dst=natural[:, m, :], src=lhs[r : r + 128, kb * BLOCK : (kb + 1) * BLOCK]
                    )
                for k in nl.affine_range(KT):
                    kk = kb * BLOCK + k * 128
                    nisa.dma_copy(dst=moving[:, k, :], src=rhs[kk : kk + 128, cols])
                for k in nl.affine_range(KT):
                    for m in nl.affine_range(MT):
                        flipped = nl.ndarray((128, 128), dtype=lhs.dtype, buffer=nl.psum)
                        nisa.nc_transpose(dst=flipped, data=natural[:, m, k * 128 : (k + 1) * 128])
                        nisa.tensor_copy(dst=stationary[:, k, m * 128 : (m + 1) * 128], src=flipped)
                for m in nl.affine_range(MT):
                    psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                    partial = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
                    nisa.memset(dst=psum, value=0.0)
                    for k in nl.affine_range(KT):
                        nisa.nc_matmul(
                            dst=psum,
                            stationary=stationary[:, k, m * 128 : (m + 1) * 128],
                            moving=moving[:, k, :],
                        )
                    nisa.tensor_copy(dst=partial, src=psum)
                    tile = total[:, m, cols]
                    nisa.tensor_tensor(dst=tile, data1=tile, data2=partial, op=nl.add)
            for m in nl.affine_range(MT):
                r = mb * BLOCK + m * 128
                nisa.dma_copy(dst=out[r : r + 128, cols], src=total[:, m, cols])
    return out
