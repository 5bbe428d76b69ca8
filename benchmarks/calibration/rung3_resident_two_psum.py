"""Ladder rung 3 and its public variants: rung 2 with the accumulator multi-buffered.

After the public software-pipelining experiments (awslabs/nki-autotune
docs/superpowers/specs/2026-06-06-software-pipeline-tier-b-design.md and its
plan): rung 2's 128 x N fp32 accumulator gets ``slots`` copies in one PSUM
tensor, row m using copy m % slots, so one row's drain and the next row's
memset can overlap the other copy's matmuls. The loop over rows is emitted
with each of its three blocks (memset, matmuls, drain) at a pipeline stage:
block b of iteration i runs in emitted step i + stage(b), so ``stages=(0, 0, 0)``
is the plain loop (the public "rotate_only" kernel, 82.9 %), ``(0, 0, 1)`` issues
row m - 1's drain after row m's matmuls (the "skewed" kernel, 83.7 %) and
``(0, 1, 1)`` issues only the memset a row ahead (83.26 %). ``order="mkn"``
runs K outside N so each stationary tile is reused by the N matmuls that follow
(83.06 % against 83.00 %). ``slots=3`` over a 128 x 2048 accumulator needs
3 MiB of PSUM and does not compile ("Out of memory in psum").
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rung3(lhsT, rhs, order="mnk", stages=(0, 0, 0), slots=2):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, MT, NT = K // 128, M // 128, N // 512
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((128, KT, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray((128, KT, N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=a[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, :])
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=b[:, k, :], src=rhs[k * 128 : (k + 1) * 128, :])
    result = nl.ndarray((128, MT, N), dtype=out.dtype, buffer=nl.sbuf)
    acc = nl.ndarray((128, slots, N), dtype=nl.float32, buffer=nl.psum)

    def zero(m):
        nisa.memset(dst=acc[:, m % slots, :], value=0.0)

    def multiply(m):
        pairs = [(n, k) for n in range(NT) for k in range(KT)]
        if order == "mkn":
            pairs = [(n, k) for k in range(KT) for n in range(NT)]
        for n, k in pairs:
            nisa.nc_matmul(
                dst=acc[:, m % slots, n * 512 : (n + 1) * 512],
                stationary=a[:, k, m * 128 : (m + 1) * 128],
                moving=b[:, k, n * 512 : (n + 1) * 512],
            )

    def drain(m):
        nisa.tensor_copy(dst=result[:, m, :], src=acc[:, m % slots, :])

    blocks = (zero, multiply, drain)
    for step in range(MT + max(stages)):
        for block, stage in zip(blocks, stages, strict=True):
            if 0 <= step - stage < MT:
                block(step - stage)
    for m in nl.affine_range(MT):
        for n in nl.affine_range(NT):
            nisa.dma_copy(
                dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512],
                src=result[:, m, n * 512 : (n + 1) * 512],
            )
    return out
