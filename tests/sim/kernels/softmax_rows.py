import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax_rows(x):
    # Row softmax over [R, F], R a multiple of 128; a list of tiles holds the
    # row blocks and a nested helper normalises one block.
    R, F = x.shape
    nblocks = R // nl.tile_size.pmax
    out = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.shared_hbm)

    def normalise(block):
        row_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=row_max, op=nl.maximum, data=block, axis=1, keepdims=True)
        shifted = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=shifted, data=block, op0=nl.subtract, operand0=row_max)
        e = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=shifted)
        total = nl.ndarray((128,), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=total, op=nl.add, data=e, axis=1)
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=inv, src=total_as_column(total))
        nisa.tensor_scalar(dst=inv, data=inv, op0=nl.divide, operand0=1.0, reverse0=True)
        res = nl.ndarray((128, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=res, data=e, op0=nl.multiply, operand0=inv)
        return res

    def total_as_column(total):
        column = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=column, src=total)
        return column

    blocks = []
    for b in nl.affine_range(nblocks):
        t = nl.ndarray((128, F), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[b * 128 : (b + 1) * 128, :])
        blocks.append(t)
    for b in nl.sequential_range(nblocks):
        res = normalise(blocks[b])
        nisa.dma_copy(dst=out[b * 128 : (b + 1) * 128, :], src=res)
    return out
