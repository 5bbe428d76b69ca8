"""One AdamW step, fp32, in the beta-1 API, after the structure of NKIBench's baseline
kernel (the one its public profile measured): per 128 x 1024 row tile four loads
(theta, m, v, g) masked to the rows that exist, then per 512-column half a chain of
tensor_scalar multiplies and adds left to the compiler's engine choice, nl.add /
nl.subtract / nl.multiply of tiles, sqrt(1000 v) on ScalarE, a VectorE reciprocal, and
a masked store; every intermediate a block of its own array."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

CHUNK = 1024  # columns per tile, two halves of 512 (fewer on small inputs)
LR, BETA1, BETA2, EPS, DECAY = 0.01, 0.9, 0.999, 1e-8, 1e-5


@nki.jit
def adamw(theta, g, m, v):
    rows, cols = theta.shape
    out = nl.ndarray((rows, cols), dtype=theta.dtype, buffer=nl.shared_hbm)
    chunk = min(CHUNK, cols)
    half = chunk // 2
    n_rows, n_chunks = (rows + 127) // 128, cols // chunk
    zero = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
    loaded = {
        name: nl.ndarray((n_rows, n_chunks, nl.par_dim(128), chunk), dtype=nl.float32)
        for name in ("theta", "m", "v", "g", "out")
    }
    steps = [
        nl.ndarray((n_rows, n_chunks, 2, nl.par_dim(128), half), dtype=nl.float32)
        for _ in range(14)
    ]
    i_p, i_c = nl.mgrid[0:128, 0:chunk]
    j_p, j_h = nl.mgrid[0:128, 0:half]
    zero[i_p, 0] = nisa.memset(shape=(128, 1), value=0.0, dtype=nl.float32)
    sources = (("theta", theta), ("m", m), ("v", v), ("g", g))
    for r in nl.affine_range(n_rows):
        valid = r * 128 + i_p < rows
        for c in nl.affine_range(n_chunks):
            for name, tensor in sources:
                loaded[name][r, c, i_p, i_c] = nl.load(
                    tensor[r * 128 + i_p, c * chunk + i_c], mask=valid
                )
            for h in nl.affine_range(2):
                _update(loaded, steps, r, c, h, zero, j_p, j_h, r * 128 + j_p < rows)
            nl.store(
                out[r * 128 + i_p, c * chunk + i_c], value=loaded["out"][r, c, i_p, i_c], mask=valid
            )
    return out


def _update(loaded, steps, r, c, h, zero, j_p, j_h, valid):
    """The AdamW arithmetic on one 128 x 512 half, one instruction per line."""
    column = h * j_h.size + j_h
    th, mo, ve, gr = (loaded[k][r, c, j_p, column] for k in ("theta", "m", "v", "g"))
    s = [step[r, c, h, j_p, j_h] for step in steps]

    def scaled(dst, data, factor):
        steps[dst][r, c, h, j_p, j_h] = nisa.tensor_scalar(
            data=data, op0=nl.multiply, operand0=factor, reverse0=True, mask=valid
        )

    scaled(0, th, DECAY)
    steps[1][r, c, h, j_p, j_h] = nl.subtract(th, s[0], mask=valid)
    scaled(2, mo, BETA1)
    scaled(3, gr, 1.0 - BETA1)
    steps[4][r, c, h, j_p, j_h] = nl.add(s[2], s[3], mask=valid)
    scaled(5, s[4], LR)
    scaled(6, ve, BETA2)
    scaled(7, gr, 1.0 - BETA2)
    steps[8][r, c, h, j_p, j_h] = nl.multiply(s[7], gr, mask=valid)
    steps[9][r, c, h, j_p, j_h] = nl.add(s[6], s[8], mask=valid)
    steps[10][r, c, h, j_p, j_h] = nisa.activation(
        op=nl.sqrt, data=s[9], bias=zero[j_p, 0], scale=1000.0, mask=valid
    )
    steps[11][r, c, h, j_p, j_h] = nisa.tensor_scalar(
        data=s[10], op0=nl.add, operand0=EPS, mask=valid
    )
    steps[12][r, c, h, j_p, j_h] = nisa.reciprocal(data=s[11], mask=valid)
    steps[13][r, c, h, j_p, j_h] = nl.multiply(s[5], s[12], mask=valid)
    loaded["out"][r, c, j_p, column] = nl.subtract(s[1], s[13], mask=valid)
