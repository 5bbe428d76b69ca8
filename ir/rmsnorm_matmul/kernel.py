# rmsnorm_matmul: rendered from its KernelIR (variant base).
# Re-render after editing knobs.json, or edit this file by hand.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_matmul(x, w):
    out = nl.ndarray((512, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    sbuf_x = nl.ndarray((128, 4, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
    sbuf_w = nl.ndarray((128, 8, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
    sbuf_sq = nl.ndarray((128, 4, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
    sbuf_ss = nl.ndarray((128, 4, 1), dtype=nl.float32, buffer=nl.sbuf)
    sbuf_ms = nl.ndarray((128, 4, 1), dtype=nl.float32, buffer=nl.sbuf)
    sbuf_rs = nl.ndarray((128, 4, 1), dtype=nl.float32, buffer=nl.sbuf)
    psum_xt = nl.ndarray((128, 8, 512), dtype=nl.bfloat16, buffer=nl.psum)
    psum_out = nl.ndarray((128, 4, 1024), dtype=nl.float32, buffer=nl.psum)
    nisa.memset(dst=psum_out, value=0.0)
    sbuf_out = nl.ndarray((128, 4, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
    for l0 in nl.affine_range(4):
        row = l0 * 128
        nisa.dma_copy(dst=sbuf_x[:, l0, 0:1024], src=x[row : row + 128, 0:1024])
    for l1 in nl.affine_range(8):
        row = l1 * 128
        nisa.dma_copy(dst=sbuf_w[:, l1, 0:1024], src=w[row : row + 128, 0:1024])
    for l0 in nl.affine_range(4):
        for l1 in nl.affine_range(8):
            f_sbuf_sq = l1 * 128
            f_sbuf_x = l1 * 128
            nisa.activation(
                dst=sbuf_sq[:, l0, f_sbuf_sq : f_sbuf_sq + 128],
                op=nl.square,
                data=sbuf_x[:, l0, f_sbuf_x : f_sbuf_x + 128],
            )
    for l0 in nl.affine_range(4):
        for l3 in nl.affine_range(1):
            nisa.tensor_reduce(
                dst=sbuf_ss[:, l0, 0:1],
                op=nl.add,
                data=sbuf_sq[:, l0, 0:1024],
                axis=1,
                keepdims=True,
            )
    for l0 in nl.affine_range(4):
        for l3 in nl.affine_range(1):
            nisa.tensor_scalar(
                dst=sbuf_ms[:, l0, 0:1],
                data=sbuf_ss[:, l0, 0:1],
                op0=nl.multiply,
                operand0=0.0009765625,
                op1=nl.add,
                operand1=1e-06,
            )
    for l0 in nl.affine_range(4):
        for l3 in nl.affine_range(1):
            nisa.activation(dst=sbuf_rs[:, l0, 0:1], op=nl.rsqrt, data=sbuf_ms[:, l0, 0:1])
    for b1 in nl.affine_range(4):
        for b2 in nl.affine_range(2):
            for b0 in nl.affine_range(1):
                sbuf_xn = nl.ndarray((128, 4, 256), dtype=nl.bfloat16, buffer=nl.sbuf)
                for l0 in nl.affine_range(4):
                    for l1 in nl.affine_range(2):
                        f_sbuf_xn = l1 * 128
                        f_sbuf_x = b1 * 256 + l1 * 128
                        nisa.tensor_scalar(
                            dst=sbuf_xn[:, l0, f_sbuf_xn : f_sbuf_xn + 128],
                            data=sbuf_x[:, b0 * 4 + l0, f_sbuf_x : f_sbuf_x + 128],
                            op0=nl.multiply,
                            operand0=sbuf_rs[:, b0 * 4 + l0, 0:1],
                        )
                for t2 in nl.affine_range(1):
                    for b3 in nl.affine_range(1):
                        for t0 in nl.affine_range(4):
                            for t3 in nl.affine_range(1):
                                for t1 in nl.affine_range(2):
                                    sbuf_xt = nl.ndarray(
                                        (128, 1, 128), dtype=nl.bfloat16, buffer=nl.sbuf
                                    )
                                    f_psum_xt = b0 * 512 + t0 * 128
                                    f_sbuf_xn = t1 * 128
                                    nisa.nc_transpose(
                                        dst=psum_xt[:, b1 * 2 + t1, f_psum_xt : f_psum_xt + 128],
                                        data=sbuf_xn[:, t0, f_sbuf_xn : f_sbuf_xn + 128],
                                    )
                                    f_psum_xt = b0 * 512 + t0 * 128
                                    nisa.tensor_copy(
                                        dst=sbuf_xt[:, 0, 0:128],
                                        src=psum_xt[:, b1 * 2 + t1, f_psum_xt : f_psum_xt + 128],
                                    )
                                    f_psum_out = b2 * 512 + t2 * 512
                                    f_sbuf_w = b2 * 512 + t2 * 512
                                    nisa.nc_matmul(
                                        dst=psum_out[:, b0 * 4 + t0, f_psum_out : f_psum_out + 512],
                                        stationary=sbuf_xt[:, 0, 0:128],
                                        moving=sbuf_w[:, b1 * 2 + t1, f_sbuf_w : f_sbuf_w + 512],
                                    )
    for l0 in nl.affine_range(4):
        for l2 in nl.affine_range(2):
            f_sbuf_out = l2 * 512
            f_psum_out = l2 * 512
            nisa.tensor_copy(
                dst=sbuf_out[:, l0, f_sbuf_out : f_sbuf_out + 512],
                src=psum_out[:, l0, f_psum_out : f_psum_out + 512],
            )
    for l0 in nl.affine_range(4):
        row = l0 * 128
        nisa.dma_copy(dst=out[row : row + 128, 0:1024], src=sbuf_out[:, l0, 0:1024])
    return out
