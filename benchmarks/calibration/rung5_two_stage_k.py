"""Ladder rung 5, the hand-written kernel: K in two stages combined in SBUF.

For each 512-column block of the output, K is split into two 1024-deep
stages. Each stage loads its rhs panel, then per 512-row block of M its
lhsT panel (both into per-block buffers indexed so consecutive blocks use
different copies), accumulates each 128 x 512 output tile over the stage's
eight K tiles in a PSUM tile of its own, drains it to SBUF and adds it into
an SBUF accumulator that holds the output column block. The accumulator is
stored after the second stage. Measured with the compiler's instruction
scheduler and linear-scan allocator off.
"""

import nki
import nki.isa as nisa
import nki.language as nl

STAGES = 2  # K stages
MBLOCK = 4  # output tiles per M block


@nki.jit
def rung5(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KS = K // 128 // STAGES  # K tiles per stage
    MB = M // (128 * MBLOCK)
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    accumulators = [
        nl.ndarray((128, M // 128, 512), dtype=out.dtype, buffer=nl.sbuf) for _ in range(4)
    ]
    for n in nl.affine_range(N // 512):
        total = accumulators[n % 4]
        nisa.memset(dst=total, value=0.0)
        lhsT_panels = [
            [
                nl.ndarray((128, KS, 128 * MBLOCK), dtype=lhsT.dtype, buffer=nl.sbuf)
                for _ in range(MB)
            ]
            for _ in range(STAGES)
        ]
        rhs_panels = [
            nl.ndarray((128, KS, 512), dtype=rhs.dtype, buffer=nl.sbuf) for _ in range(STAGES)
        ]
        for s in nl.sequential_range(STAGES):
            moving = rhs_panels[s]
            for k in nl.affine_range(KS):
                kk = (s * KS + k) * 128
                nisa.dma_copy(dst=moving[:, k, :], src=rhs[kk : kk + 128, n * 512 : (n + 1) * 512])
            for mb in nl.affine_range(MB):
                stationary = lhsT_panels[s][mb]
                cols = slice(mb * 128 * MBLOCK, (mb + 1) * 128 * MBLOCK)
                for k in nl.affine_range(KS):
                    kk = (s * KS + k) * 128
                    nisa.dma_copy(dst=stationary[:, k, :], src=lhsT[kk : kk + 128, cols])
                for m in nl.affine_range(MBLOCK):
                    psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                    partial = nl.ndarray((128, 512), dtype=out.dtype, buffer=nl.sbuf)
                    nisa.memset(dst=psum, value=0.0)
                    for k in nl.affine_range(KS):
                        nisa.nc_matmul(
                            dst=psum,
                            stationary=stationary[:, k, m * 128 : (m + 1) * 128],
                            moving=moving[:, k, :],
                        )
                    nisa.tensor_copy(dst=partial, src=psum)
                    tile = total[:, mb * MBLOCK + m, :]
                    nisa.tensor_tensor(dst=tile, data1=tile, data2=partial, op=nl.add)
        for m in nl.affine_range(M // 128):
            nisa.dma_copy(
                dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=total[:, m, :]
            )
    return out
