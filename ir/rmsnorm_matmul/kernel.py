# rmsnorm_matmul: rendered from its KernelIR (variant base).
# Re-render after editing knobs.json, or edit this file by hand.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rmsnorm_matmul(x, w):
    out = nl.ndarray((1024, 2048), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    sbuf_x = nl.ndarray((128, 8, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
    sbuf_sq = nl.ndarray((128, 8, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
    for l0 in nl.affine_range(8):
        row = l0 * 128
        nisa.dma_copy(dst=sbuf_x[:, l0, 0:1024], src=x[row : row + 128, 0:1024])
        nisa.activation(dst=sbuf_sq[:, l0, 0:1024], op=nl.square, data=sbuf_x[:, l0, 0:1024])
    for b0 in nl.affine_range(8):
        sbuf_ss = nl.ndarray((128, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
        sbuf_ms = nl.ndarray((128, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
        sbuf_rs = nl.ndarray((128, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
        sbuf_mm = nl.ndarray((128, 1, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
        sbuf_out = nl.ndarray((128, 1, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
        for l0 in nl.affine_range(1):
            nisa.tensor_reduce(
                dst=sbuf_ss[:, l0, 0:1],
                op=nl.add,
                data=sbuf_sq[:, b0 + l0, 0:1024],
                axis=1,
                keepdims=True,
            )
            nisa.tensor_scalar(
                dst=sbuf_ms[:, l0, 0:1],
                data=sbuf_ss[:, l0, 0:1],
                op0=nl.multiply,
                operand0=0.0009765625,
                op1=nl.add,
                operand1=1e-06,
                engine=nisa.engine.scalar,
            )
            nisa.activation(dst=sbuf_rs[:, l0, 0:1], op=nl.rsqrt, data=sbuf_ms[:, l0, 0:1])
        for b1 in nl.sequential_range(1):
            sbuf_xt = nl.ndarray((128, 8, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
            psum_mm = nl.ndarray((128, 1, 2048), dtype=nl.float32, buffer=nl.psum)
            for b2 in nl.affine_range(1):
                sbuf_w = nl.ndarray((128, 8, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
                for l1 in nl.affine_range(8):
                    row = b1 * 1024 + l1 * 128
                    col = b2 * 2048
                    nisa.dma_copy(
                        dst=sbuf_w[:, l1, 0:2048], src=w[row : row + 128, col : col + 2048]
                    )
                for t0 in nl.affine_range(1):
                    for t1 in nl.affine_range(8):
                        psum_xt = nl.ndarray((128, 1, 128), dtype=nl.bfloat16, buffer=nl.psum)
                        f_sbuf_x = b1 * 1024 + t1 * 128
                        nisa.nc_transpose(
                            dst=psum_xt[:, 0, 0:128],
                            data=sbuf_x[:, b0 + t0, f_sbuf_x : f_sbuf_x + 128],
                        )
                        f_sbuf_xt = t0 * 128
                        nisa.tensor_copy(
                            dst=sbuf_xt[:, t1, f_sbuf_xt : f_sbuf_xt + 128],
                            src=psum_xt[:, 0, 0:128],
                        )
                        for t2 in nl.affine_range(4):
                            f_psum_mm = b2 * 2048 + t2 * 512
                            f_sbuf_xt = t0 * 128
                            f_sbuf_w = t2 * 512
                            nisa.nc_matmul(
                                dst=psum_mm[:, t0, f_psum_mm : f_psum_mm + 512],
                                stationary=sbuf_xt[:, t1, f_sbuf_xt : f_sbuf_xt + 128],
                                moving=sbuf_w[:, t1, f_sbuf_w : f_sbuf_w + 512],
                            )
            for l0 in nl.affine_range(1):
                for l2 in nl.affine_range(4):
                    f_sbuf_mm = l2 * 512
                    f_psum_mm = l2 * 512
                    nisa.tensor_copy(
                        dst=sbuf_mm[:, l0, f_sbuf_mm : f_sbuf_mm + 512],
                        src=psum_mm[:, l0, f_psum_mm : f_psum_mm + 512],
                        engine=nisa.engine.scalar,
                    )
        for l0 in nl.affine_range(1):
            nisa.tensor_scalar(
                dst=sbuf_out[:, l0, 0:2048],
                data=sbuf_mm[:, l0, 0:2048],
                op0=nl.multiply,
                operand0=sbuf_rs[:, l0, 0:1],
            )
            row = b0 * 128 + l0 * 128
            nisa.dma_copy(dst=out[row : row + 128, 0:2048], src=sbuf_out[:, l0, 0:2048])
    return out
