"""rmsnorm(lhs) @ rhs on Trn2, written after the public workload's operator graph.

awslabs/nki-autotune (kernel_library/rmsnorm_matmul_m2048_k2048_n2048.py) defines
the kernel as: load rhs and lhs; ``activation_reduce`` (square, add) for each
row's sum of squares; ``activation`` (rsqrt, scale 1/K, bias eps); a
``tensor_scalar`` multiply into bf16; a DMA transpose of the normalised rows;
``nc_matmul`` into PSUM; a copy out of PSUM; the store. Its ``reference_mfu``,
79.09 % at 2048^3 bf16 (the notes: rmsnorm + matmul 79-80 %), is documented
there as the "best manually achieved Kaena MFU percentage for the same workload
and shape": a hand-written kernel whose text is not public (the same file's
transform ladder reaches 86.99 %).

The loop structure is therefore assumed (the public record gives the graph and
the figure, not that kernel's blocking): rhs loaded once and resident; per
128-row tile of lhs, the row loaded in one DMA, normalised, and transposed in
128 x 128 blocks (one SBUF -> SBUF DMA transpose each); then for each 512
output columns K accumulated in a 128 x 512 PSUM tile, copied out and stored.
Tiles allocated in the loop bodies, so the compiler keeps several copies.
"""

import nki
import nki.isa as nisa
import nki.language as nl

EPS = 1e-6


@nki.jit
def rmsnorm_matmul(lhs, rhs):
    M, K = lhs.shape
    _, N = rhs.shape
    KT, MT, NT = K // 128, M // 128, N // 512
    out = nl.ndarray((M, N), dtype=lhs.dtype, buffer=nl.shared_hbm)
    w = nl.ndarray((128, KT, N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        nisa.dma_copy(dst=w[:, k, :], src=rhs[k * 128 : (k + 1) * 128, :])
    for m in nl.affine_range(MT):
        x = nl.ndarray((128, K), dtype=lhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=lhs[m * 128 : (m + 1) * 128, :])
        squares = nl.ndarray((128, K), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(
            dst=squares, op=nl.square, data=x, reduce_op=nl.add, reduce_res=total
        )
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=inv, op=nl.rsqrt, data=total, scale=1.0 / K, bias=EPS)
        xn = nl.ndarray((128, K), dtype=lhs.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=xn, data=x, op0=nl.multiply, operand0=inv)
        xt = nl.ndarray((128, KT, 128), dtype=lhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            nisa.dma_transpose(dst=xt[:, k, :], src=xn[:, k * 128 : (k + 1) * 128])
        for n in nl.affine_range(NT):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                nisa.nc_matmul(
                    dst=acc, stationary=xt[:, k, :], moving=w[:, k, n * 512 : (n + 1) * 512]
                )
            res = nl.ndarray((128, 512), dtype=lhs.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=res)
    return out
