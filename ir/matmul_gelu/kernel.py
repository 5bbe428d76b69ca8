# matmul_gelu: rendered from its KernelIR (variant base).
# Re-render after editing knobs.json, or edit this file by hand.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_gelu(lhsT, rhs):
    out = nl.ndarray((1024, 2048), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for b1 in nl.affine_range(8):
        for b2 in nl.affine_range(4):
            for t1 in nl.affine_range(1):
                for t2 in nl.affine_range(1):
                    psum_mm = nl.ndarray((128, 1, 512), dtype=nl.float32, buffer=nl.psum)
                    sbuf_mm = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                    sbuf_out = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                    for b0 in nl.affine_range(8):
                        for t0 in nl.affine_range(1):
                            sbuf_lhsT = nl.ndarray((128, 1, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
                            sbuf_rhs = nl.ndarray((128, 1, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                            row = b0 * 128 + t0 * 128
                            col = b1 * 128 + t1 * 128
                            nisa.dma_copy(
                                dst=sbuf_lhsT[:, 0, 0:128],
                                src=lhsT[row : row + 128, col : col + 128],
                            )
                            row = b0 * 128 + t0 * 128
                            col = b2 * 512 + t2 * 512
                            nisa.dma_copy(
                                dst=sbuf_rhs[:, 0, 0:512], src=rhs[row : row + 128, col : col + 512]
                            )
                            nisa.nc_matmul(
                                dst=psum_mm[:, 0, 0:512],
                                stationary=sbuf_lhsT[:, 0, 0:128],
                                moving=sbuf_rhs[:, 0, 0:512],
                            )
                    nisa.tensor_copy(
                        dst=sbuf_mm[:, 0, 0:512],
                        src=psum_mm[:, 0, 0:512],
                        engine=nisa.engine.scalar,
                    )
                    nisa.activation(
                        dst=sbuf_out[:, 0, 0:512], op=nl.gelu, data=sbuf_mm[:, 0, 0:512]
                    )
                    row = b1 * 128 + t1 * 128
                    col = b2 * 512 + t2 * 512
                    nisa.dma_copy(
                        dst=out[row : row + 128, col : col + 512], src=sbuf_out[:, 0, 0:512]
                    )
    return out
