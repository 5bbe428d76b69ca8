"""lhs @ rhs, the hand-tuned kernel: the stationary operand transposed by DMA.

M outer (1024-row blocks), N middle (512 columns), K inner (two 1024-deep
blocks). For every (M block, N block, K block) the lhs block is transposed
from HBM into SBUF by the DMA engines (so lhs is transposed again for every
N block) and the rhs panel is loaded; each 128 x 512 output tile
accumulates the K block in a PSUM tile of its own, is drained and added
into an SBUF accumulator holding the M block's rows, which is stored per N
block. Measured with the compiler's instruction scheduler and linear-scan
allocator off.
"""

import nki
import nki.isa as nisa
import nki.language as nl

BLOCK = 1024  # rows of M and of K per block


@nki.jit
def lhs_dma_transpose(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    KT = BLOCK // 128  # K tiles per block
    MT = BLOCK // 128  # output tiles per M block
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // BLOCK):
        rows = slice(mb * BLOCK, (mb + 1) * BLOCK)
        total = nl.ndarray((128, MT, N), dtype=out.dtype, buffer=nl.sbuf)
        nisa.memset(dst=total, value=0.0)
        for n in nl.affine_range(N // 512):
            cols = slice(n * 512, (n + 1) * 512)
            for kb in nl.sequential_range(K // BLOCK):
                stationary = nl.ndarray((128, KT, BLOCK), dtype=lhs.dtype, buffer=nl.sbuf)
                moving = nl.ndarray((128, KT, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                for k in nl.affine_range(KT):
                    kk = kb * BLOCK + k * 128
                    nisa.dma_transpose(dst=stationary[:, k, :], src=lhs[rows, kk : kk + 128])
                    nisa.dma_copy(dst=moving[:, k, :], src=rhs[kk : kk + 128, cols])
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
                nisa.dma_copy(
                    dst=out[mb * BLOCK + m * 128 : mb * BLOCK + (m + 1) * 128, cols],
                    src=total[:, m, cols],
                )
    return out
