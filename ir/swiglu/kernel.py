# swiglu: rendered from its KernelIR (variant base).
# Re-render after editing knobs.json, or edit this file by hand.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def swiglu(xT, w_gate, w_up):
    out = nl.ndarray((1024, 1024), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for b1 in nl.affine_range(8):
        for b2 in nl.affine_range(2):
            for t1 in nl.affine_range(1):
                for t2 in nl.affine_range(1):
                    psum_gate = nl.ndarray((128, 1, 512), dtype=nl.float32, buffer=nl.psum)
                    sbuf_gate = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                    psum_up = nl.ndarray((128, 1, 512), dtype=nl.float32, buffer=nl.psum)
                    sbuf_up = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                    sbuf_act = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                    sbuf_out = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                    for b0 in nl.affine_range(8):
                        for t0 in nl.affine_range(1):
                            sbuf_xT = nl.ndarray((128, 1, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
                            sbuf_w_gate = nl.ndarray(
                                (128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf
                            )
                            sbuf_w_up = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                            row = b0 * 128 + t0 * 128
                            col = b1 * 128 + t1 * 128
                            nisa.dma_copy(
                                dst=sbuf_xT[:, 0, 0:128], src=xT[row : row + 128, col : col + 128]
                            )
                            row = b0 * 128 + t0 * 128
                            col = b2 * 512 + t2 * 512
                            nisa.dma_copy(
                                dst=sbuf_w_gate[:, 0, 0:512],
                                src=w_gate[row : row + 128, col : col + 512],
                            )
                            row = b0 * 128 + t0 * 128
                            col = b2 * 512 + t2 * 512
                            nisa.dma_copy(
                                dst=sbuf_w_up[:, 0, 0:512],
                                src=w_up[row : row + 128, col : col + 512],
                            )
                            nisa.nc_matmul(
                                dst=psum_gate[:, 0, 0:512],
                                stationary=sbuf_xT[:, 0, 0:128],
                                moving=sbuf_w_gate[:, 0, 0:512],
                            )
                            nisa.nc_matmul(
                                dst=psum_up[:, 0, 0:512],
                                stationary=sbuf_xT[:, 0, 0:128],
                                moving=sbuf_w_up[:, 0, 0:512],
                            )
                    nisa.tensor_copy(
                        dst=sbuf_gate[:, 0, 0:512],
                        src=psum_gate[:, 0, 0:512],
                        engine=nisa.engine.scalar,
                    )
                    nisa.tensor_copy(
                        dst=sbuf_up[:, 0, 0:512],
                        src=psum_up[:, 0, 0:512],
                        engine=nisa.engine.scalar,
                    )
                    nisa.activation(
                        dst=sbuf_act[:, 0, 0:512], op=nl.silu, data=sbuf_gate[:, 0, 0:512]
                    )
                    nisa.tensor_tensor(
                        dst=sbuf_out[:, 0, 0:512],
                        data1=sbuf_act[:, 0, 0:512],
                        data2=sbuf_up[:, 0, 0:512],
                        op=nl.multiply,
                    )
                    row = b1 * 128 + t1 * 128
                    col = b2 * 512 + t2 * 512
                    nisa.dma_copy(
                        dst=out[row : row + 128, col : col + 512], src=sbuf_out[:, 0, 0:512]
                    )
    return out
