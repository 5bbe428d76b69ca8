"""Conv2d one output row at a time, written here after a public CS152 lab 6 solution
(Jingfeng0705/cs152_lab6 nki_conv2d/conv2d.py @a635a9f): every weight tap loaded once,
transposed by DMA; for each image, output-channel tile and output row, one PSUM row
accumulates a matmul per input-channel tile and tap, each on its own freshly loaded
input row segment; the bias is added on the way out of PSUM. Beta-1 API."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def conv2d_rowwise(X, W, bias):
    images, c_in, height, width = X.shape
    c_out, _, taps, _ = W.shape
    out_h, out_w = height - taps + 1, width - taps + 1
    P = nl.tile_size.pmax
    in_tiles, out_tiles = c_in // P, c_out // P
    Y = nl.ndarray((images, c_out, out_h, out_w), dtype=X.dtype, buffer=nl.hbm)

    weights = nl.ndarray((P, P, out_tiles, in_tiles, taps, taps), dtype=W.dtype, buffer=nl.sbuf)
    for o in nl.affine_range(out_tiles):
        for c in nl.affine_range(in_tiles):
            for a in nl.affine_range(taps):
                for b in nl.affine_range(taps):
                    weights[:, :, o, c, a, b] = nl.load_transpose2d(
                        W[o * P : (o + 1) * P, c * P : (c + 1) * P, a, b]
                    )

    for n in nl.affine_range(images):
        for o in nl.affine_range(out_tiles):
            shift = nl.load(bias[o * P : (o + 1) * P])
            for r in nl.affine_range(out_h):
                acc = nl.zeros((P, out_w), dtype=nl.float32, buffer=nl.psum)
                for c in nl.affine_range(in_tiles):
                    for a in nl.affine_range(taps):
                        for b in nl.affine_range(taps):
                            row = nl.load(X[n, c * P : (c + 1) * P, r + a, b : b + out_w])
                            acc += nisa.nc_matmul(weights[:, :, o, c, a, b], row)
                nl.store(Y[n, o * P : (o + 1) * P, r], nl.add(shift, acc))
    return Y
