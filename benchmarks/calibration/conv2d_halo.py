"""Conv2d by output blocks with a double-buffered input halo, written here after a public
CS152 lab 6 solution (magmawolf8/cs152-lab6 nki_conv2d/conv2d.py @2814885). An output
block is TH x TW pixels (TH * TW = 512 where the shape allows, TH >= 16 and TW >= 32 as
far as they divide). For each image, block and output-channel tile, the input channel
tiles stream through two halo buffers (the next one's DMA issued before this one's
matmuls); each tile's weights are loaded whole and transposed per tap on TensorE; each
tap packs its shifted window into a contiguous tile (nl.copy) for the matmul. Bias added
in PSUM; the block leaves through a copy. Beta-1 API."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def _twos(n):
    count = 0
    while n % 2 == 0:
        n //= 2
        count += 1
    return count


@nki.jit
def conv2d_halo(X, W, bias):
    images, c_in, height, width = X.shape
    c_out, _, taps, _ = W.shape
    out_h, out_w = height - taps + 1, width - taps + 1
    P = nl.tile_size.pmax
    tile_h = 2 ** min(max(4, 9 - _twos(out_w)), _twos(out_h))
    tile_w = 2 ** min(max(5, 9 - _twos(out_h)), _twos(out_w))
    halo_h, halo_w = tile_h + taps - 1, tile_w + taps - 1
    in_tiles = c_in // P
    Y = nl.ndarray((images, c_out, out_h, out_w), dtype=X.dtype, buffer=nl.hbm)

    for n in nl.affine_range(images):
        for bh in nl.affine_range(out_h // tile_h):
            for bw in nl.affine_range(out_w // tile_w):
                for o in nl.affine_range(c_out // P):
                    halos = [
                        nl.ndarray((P, halo_h, halo_w), dtype=X.dtype, buffer=nl.sbuf)
                        for _ in range(2)
                    ]
                    acc = nl.zeros((P, tile_h * tile_w), dtype=nl.float32, buffer=nl.psum)
                    taps_t = [
                        [nl.ndarray((P, P), dtype=X.dtype, buffer=nl.sbuf) for _ in range(taps)]
                        for _ in range(taps)
                    ]
                    raw = nl.ndarray((P, P, taps, taps), dtype=X.dtype, buffer=nl.sbuf)
                    rows = slice(bh * tile_h, bh * tile_h + halo_h)
                    cols = slice(bw * tile_w, bw * tile_w + halo_w)
                    nisa.dma_copy(dst=halos[0], src=X[n, 0:P, rows, cols])
                    for c in nl.static_range(in_tiles):
                        if c + 1 < in_tiles:
                            nisa.dma_copy(
                                dst=halos[(c + 1) % 2],
                                src=X[n, (c + 1) * P : (c + 2) * P, rows, cols],
                            )
                        raw[...] = nl.load(W[o * P : (o + 1) * P, c * P : (c + 1) * P, :, :])
                        for a in nl.static_range(taps):
                            for b in nl.static_range(taps):
                                taps_t[a][b][...] = nisa.nc_transpose(raw[:, :, a, b])
                        for a in nl.static_range(taps):
                            for b in nl.static_range(taps):
                                window = nl.copy(halos[c % 2][:, a : a + tile_h, b : b + tile_w])
                                acc[...] += nisa.nc_matmul(
                                    taps_t[a][b], window.reshape((P, tile_h * tile_w))
                                )
                    acc[...] = nl.add(acc, nl.load(bias[o * P : (o + 1) * P]))
                    block = nl.copy(acc).reshape((P, tile_h, tile_w))
                    nisa.dma_copy(
                        dst=Y[n, o * P : (o + 1) * P, bh * tile_h : (bh + 1) * tile_h,
                              bw * tile_w : (bw + 1) * tile_w],
                        src=block,
                    )  # fmt: skip
    return Y
