# layernorm: rendered from its KernelIR (variant base).
# Re-render after editing knobs.json, or edit this file by hand.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def layernorm(x):
    out = nl.ndarray((1024, 2048), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for b0 in nl.affine_range(8):
        for t0 in nl.affine_range(1):
            sbuf_x = nl.ndarray((128, 1, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
            sbuf_dev2 = nl.ndarray((128, 1, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
            row = b0 * 128 + t0 * 128
            nisa.dma_copy(dst=sbuf_x[:, 0, 0:2048], src=x[row : row + 128, 0:2048])
            sbuf_total = nl.ndarray((128, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
            sbuf_neg_mean = nl.ndarray((128, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(
                dst=sbuf_total[:, 0, 0:1],
                op=nl.add,
                data=sbuf_x[:, 0, 0:2048],
                axis=1,
                keepdims=True,
            )
            nisa.tensor_scalar(
                dst=sbuf_neg_mean[:, 0, 0:1],
                data=sbuf_total[:, 0, 0:1],
                op0=nl.multiply,
                operand0=-0.00048828125,
                engine=nisa.engine.scalar,
            )
            nisa.activation(
                dst=sbuf_dev2[:, 0, 0:2048],
                op=nl.square,
                data=sbuf_x[:, 0, 0:2048],
                bias=sbuf_neg_mean[:, 0, 0:1],
            )
            sbuf_var_sum = nl.ndarray((128, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
            sbuf_var = nl.ndarray((128, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
            sbuf_rstd = nl.ndarray((128, 1, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(
                dst=sbuf_var_sum[:, 0, 0:1],
                op=nl.add,
                data=sbuf_dev2[:, 0, 0:2048],
                axis=1,
                keepdims=True,
            )
            nisa.tensor_scalar(
                dst=sbuf_var[:, 0, 0:1],
                data=sbuf_var_sum[:, 0, 0:1],
                op0=nl.multiply,
                operand0=0.00048828125,
                op1=nl.add,
                operand1=1e-05,
                engine=nisa.engine.scalar,
            )
            nisa.activation(dst=sbuf_rstd[:, 0, 0:1], op=nl.rsqrt, data=sbuf_var[:, 0, 0:1])
            for b1 in nl.affine_range(4):
                for t1 in nl.affine_range(1):
                    sbuf_out = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                    f_sbuf_x = b1 * 512 + t1 * 512
                    nisa.tensor_scalar(
                        dst=sbuf_out[:, 0, 0:512],
                        data=sbuf_x[:, 0, f_sbuf_x : f_sbuf_x + 512],
                        op0=nl.add,
                        operand0=sbuf_neg_mean[:, 0, 0:1],
                        op1=nl.multiply,
                        operand1=sbuf_rstd[:, 0, 0:1],
                        engine=nisa.engine.scalar,
                    )
                    row = b0 * 128 + t0 * 128
                    col = b1 * 512 + t1 * 512
                    nisa.dma_copy(
                        dst=out[row : row + 128, col : col + 512], src=sbuf_out[:, 0, 0:512]
                    )
    return out
