"""rmsnorm(x @ w + z) * g, fp32, in the beta-1 API, after NKIBench's hand-written baseline
kernel (the one its public profile measured): per 128-row tile, load x's rows whole;
for every 512-column tile accumulate K / 128 matmuls in PSUM (nl.matmul transposing
the x slice), copy into the row's SBUF tile; then add z, square, sum, scale and add
eps, rsqrt, normalise, multiply by g broadcast across partitions, and store.

The public kernel loads each w tile inside the row loop, but the compiler keeps w
resident: the profile's HBM reads (98.1 MB) are each input once (83.9 MB) and 14.2 MB
more, not the 604 MB the loads as written would move. The w loads sit here before the
row loop, where the compiled kernel effectively issued them."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE_N = 512


@nki.jit
def matmul_add_rmsnorm(x, w, z, g, eps):
    rows, k_size = x.shape
    n_size = w.shape[1]
    out = nl.ndarray((rows, n_size), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_n = nl.arange(n_size)[None, :]
    i_t = nl.arange(TILE_N)[None, :]
    weight = nl.load(g.reshape((1, n_size))[nl.arange(1)[:, None], i_n])
    w_tiles = nl.ndarray((k_size // 128, nl.par_dim(128), n_size), dtype=w.dtype)
    for k in nl.affine_range(k_size // 128):
        w_tiles[k, i_p, i_n] = nl.load(w[k * 128 + i_p, i_n])
    for r in nl.affine_range(rows // 128):
        product = nl.ndarray((128, n_size), dtype=x.dtype, buffer=nl.sbuf)
        x_rows = nl.load(x[r * 128 + i_p, nl.arange(k_size)[None, :]])
        for n in nl.affine_range(n_size // TILE_N):
            acc = nl.zeros((128, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // 128):
                w_tile = w_tiles[k, i_p, n * TILE_N + i_t]
                acc += nl.matmul(x_rows[:, k * 128 : (k + 1) * 128], w_tile)
            product[i_p, n * TILE_N + i_t] = nl.copy(acc, dtype=x.dtype)
        summed = nl.add(product, nl.load(z[r * 128 + i_p, i_n]))
        mean = nl.sum(nl.square(summed), axis=[1]) / n_size
        inverse_rms = nl.rsqrt(nl.add(mean, eps))
        normed = nl.multiply(summed, inverse_rms)
        normed[...] = nl.multiply(normed, weight.broadcast_to((128, n_size)))
        nl.store(out[r * 128 + i_p, i_n], value=normed)
    return out
