"""rmsnorm(x) @ w, fp32, in the beta-1 API: w stays in SBUF; each normalised row tile is
transposed on TensorE (128 x 128 at a time) and multiplied N chunk by N chunk."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rmsnorm_matmul(x, w):
    rows, k_size = x.shape
    n_size = w.shape[1]
    out = nl.ndarray((rows, n_size), dtype=x.dtype, buffer=nl.shared_hbm)
    kt_count, n_chunk = k_size // 128, 512
    weights = nl.ndarray((kt_count, nl.par_dim(128), n_size), dtype=w.dtype, buffer=nl.sbuf)
    for kt in nl.affine_range(kt_count):
        weights[kt] = nl.load(w[kt * 128 : (kt + 1) * 128, :])
    for r in nl.affine_range(rows // 128):
        tile = nl.load(x[r * 128 : (r + 1) * 128, :])
        mean_sq = nl.sum(nl.multiply(nl.square(tile), 1.0 / k_size), axis=1, keepdims=True)
        normed = nl.divide(tile, nl.sqrt(mean_sq))
        normed_t = nl.ndarray((kt_count, nl.par_dim(128), 128), dtype=x.dtype, buffer=nl.sbuf)
        for kt in nl.affine_range(kt_count):
            normed_t[kt] = nl.copy(nl.transpose(normed[:, kt * 128 : (kt + 1) * 128]))
        for n in nl.affine_range(n_size // n_chunk):
            acc = nl.zeros((128, n_chunk), dtype=nl.float32, buffer=nl.psum)
            for kt in nl.affine_range(kt_count):
                acc += nl.matmul(
                    normed_t[kt], weights[kt, :, n * n_chunk : (n + 1) * n_chunk], transpose_x=True
                )
            nl.store(
                out[r * 128 : (r + 1) * 128, n * n_chunk : (n + 1) * n_chunk], value=nl.copy(acc)
            )
    return out
