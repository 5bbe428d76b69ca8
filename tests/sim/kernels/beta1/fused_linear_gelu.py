"""gelu(x @ w + bias) in the beta-1 API, the bias added per output column after a row
broadcast, the activation reading the matmul straight out of PSUM; x arrives
transposed ([K, M]), K accumulated in PSUM 128 at a time."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def linear_gelu(xT, w, bias):
    k_size, m_size = xT.shape
    n_size = w.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=xT.dtype, buffer=nl.shared_hbm)
    b_row = nl.load(bias.reshape((1, n_size)))
    b_all = b_row.broadcast_to((128, n_size))
    for m in nl.affine_range(m_size // 128):
        acc = nl.zeros((128, n_size), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(k_size // 128):
            lhs = nl.load(xT[nl.ds(k * 128, 128), nl.ds(m * 128, 128)])
            rhs = nl.load(w[nl.ds(k * 128, 128), :])
            acc += nisa.nc_matmul(lhs, rhs)
        shifted = nisa.tensor_tensor(acc, b_all, op=nl.add)
        nl.store(out[nl.ds(m * 128, 128), :], value=nl.gelu(shifted))
    return out
