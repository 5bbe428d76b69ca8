"""The NKI tutorial's fully blocked matmul (fp32 inputs): M, N and K blocks.

For each 512-column block of the output an SBUF accumulator holds every
output tile of the column; K is walked in 1024-deep blocks, each loading its
rhs panel once and, per 1024-row block of M, its lhsT panel (1024-column
rows); each output tile accumulates the K block in PSUM and is added into
the SBUF accumulator, which is stored once the column is complete.
"""

import nki
import nki.isa as nisa
import nki.language as nl

BLOCK = 1024  # K and M block size
KT = BLOCK // 128  # K tiles per block
MT = BLOCK // 128  # output tiles per M block


@nki.jit
def tutorial_k_blocked(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // 512):
        cols = slice(n * 512, (n + 1) * 512)
        result = nl.ndarray((128, M // 128, 512), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.memset(dst=result, value=0.0)
        for kb in nl.sequential_range(K // BLOCK):
            moving = [nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf) for _ in range(KT)]
            for k in nl.affine_range(KT):
                kk = kb * BLOCK + k * 128
                nisa.dma_copy(dst=moving[k], src=rhs[kk : kk + 128, cols])
            for mb in nl.affine_range(M // BLOCK):
                stationary = [
                    nl.ndarray((128, BLOCK), dtype=lhsT.dtype, buffer=nl.sbuf) for _ in range(KT)
                ]
                for k in nl.affine_range(KT):
                    kk = kb * BLOCK + k * 128
                    nisa.dma_copy(
                        dst=stationary[k], src=lhsT[kk : kk + 128, mb * BLOCK : (mb + 1) * BLOCK]
                    )
                for m in nl.affine_range(MT):
                    psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
                        nisa.nc_matmul(
                            dst=psum,
                            stationary=stationary[k][:, m * 128 : (m + 1) * 128],
                            moving=moving[k],
                        )
                    tile = result[:, mb * MT + m, :]
                    nisa.tensor_tensor(dst=tile, data1=tile, data2=psum, op=nl.add)
        for m in nl.affine_range(M // 128):
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, cols], src=result[:, m, :])
    return out
