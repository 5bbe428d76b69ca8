"""rmsnorm(x + z) * g @ w, fp32, in the beta-1 API, after NKIBench's hand-written baseline
kernel (the one its public profile measured): per 128-row tile, load x and z whole,
add, square, sum, scale and add eps, rsqrt, normalise, multiply by g broadcast across
partitions; then for every 512-column output tile accumulate K / 128 matmuls in PSUM,
letting nl.matmul transpose the normalised slice, and copy out and store.

The public kernel loads each w tile inside the row loop, but the compiler keeps w
resident: the profile's HBM reads (42,012,672 bytes) are x, z, w and g once each and a
128 x 128 fp32 identity (for the transposes), not the 302 MB the loads as written would
move. The w loads sit here before the row loop, where the compiled kernel effectively
issued them."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE_N = 512


@nki.jit
def add_rmsnorm_matmul(x, w, z, g, eps):
    rows, k_size = x.shape
    n_size = w.shape[1]
    out = nl.ndarray((rows, n_size), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_k = nl.arange(k_size)[None, :]
    i_n = nl.arange(TILE_N)[None, :]
    weight = nl.load(g.reshape((1, k_size))[nl.arange(1)[:, None], i_k])
    w_tiles = nl.ndarray((k_size // 128, nl.par_dim(128), n_size), dtype=w.dtype)
    for k in nl.affine_range(k_size // 128):
        w_tiles[k, i_p, nl.arange(n_size)[None, :]] = nl.load(
            w[k * 128 + i_p, nl.arange(n_size)[None, :]]
        )
    for r in nl.affine_range(rows // 128):
        summed = nl.add(nl.load(x[r * 128 + i_p, i_k]), nl.load(z[r * 128 + i_p, i_k]))
        mean = nl.sum(nl.square(summed), axis=[1]) / k_size
        inverse_rms = nl.rsqrt(nl.add(mean, eps))
        normed = nl.multiply(summed, inverse_rms)
        normed[...] = nl.multiply(normed, weight.broadcast_to((128, k_size)))
        for n in nl.affine_range(n_size // TILE_N):
            acc = nl.zeros((128, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // 128):
                w_tile = w_tiles[k, i_p, n * TILE_N + i_n]
                acc += nl.matmul(normed[:, k * 128 : (k + 1) * 128], w_tile)
            nl.store(out[r * 128 + i_p, n * TILE_N + i_n], value=nl.copy(acc, dtype=out.dtype))
    return out
