"""A blocked GEMM in the beta-1 API, after the public nki-autotune template's idea.

out = lhsT.T @ rhs (``transposed_lhs=True``) or lhs @ rhs. The three
dimensions are cut into ``k_blocks``/``m_blocks``/``n_blocks`` blocks and
walked in ``loop_order`` (a permutation of "MNK", outermost first). Each
operand block is loaded at the innermost loop that fixes both its indices;
an lhs block (``transposed_lhs=False``) arrives transposed by the DMA engine.
Each output block accumulates over its K blocks in PSUM when every output
block alive across the K loop fits in PSUM's eight banks, else in an fp32
SBUF block (each K block drained into it); it is cast and stored once K is
done.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

P = 128
TILE_N = 512


@nki.jit
def gemm(lhs, rhs, loop_order="MNK", k_blocks=1, m_blocks=1, n_blocks=1, transposed_lhs=True):
    if transposed_lhs:
        k_size, m_size = lhs.shape
    else:
        m_size, k_size = lhs.shape
    n_size = rhs.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=rhs.dtype, buffer=nl.shared_hbm)
    kb, mb, nb = k_size // k_blocks, m_size // m_blocks, n_size // n_blocks
    tn = min(TILE_N, nb)
    sizes = {"M": m_blocks, "N": n_blocks, "K": k_blocks}
    state = {}  # the current operand blocks and the output blocks still accumulating
    # Output blocks alive at once: those of the M/N loops nested inside K.
    inner = loop_order[loop_order.index("K") + 1 :]
    alive = (m_blocks if "M" in inner else 1) * (n_blocks if "N" in inner else 1)
    in_psum = alive * (mb // P) * (nb // tn) <= 8

    def load_lhs(k, m):
        block = nl.ndarray((kb // P, nl.par_dim(P), mb), dtype=lhs.dtype, buffer=nl.sbuf)
        for kt in nl.affine_range(kb // P):
            k0 = k * kb + kt * P
            if transposed_lhs:
                block[kt] = nl.load(lhs[k0 : k0 + P, m * mb : (m + 1) * mb])
            else:
                # lhs rows arrive transposed: the DMA engine's transpose.
                block[kt] = nl.load_transpose2d(lhs[m * mb : (m + 1) * mb, k0 : k0 + P])
        return block

    def load_rhs(k, n):
        block = nl.ndarray((kb // P, nl.par_dim(P), nb), dtype=rhs.dtype, buffer=nl.sbuf)
        for kt in nl.affine_range(kb // P):
            block[kt] = nl.load(rhs[k * kb + kt * P : k * kb + (kt + 1) * P, n * nb : (n + 1) * nb])
        return block

    def result_block(m, n):
        key = (m, n)
        if key not in state:
            if in_psum:
                state[key] = [
                    [nl.zeros((P, tn), dtype=nl.float32, buffer=nl.psum) for _ in range(nb // tn)]
                    for _ in range(mb // P)
                ]
            else:
                state[key] = nl.zeros(
                    (mb // P, nl.par_dim(P), nb), dtype=nl.float32, buffer=nl.sbuf
                )
        return state[key]

    def compute(k, m, n):
        a, b, acc = state["lhs"], state["rhs"], result_block(m, n)
        for mt in nl.affine_range(mb // P):
            for nt in nl.affine_range(nb // tn):
                psum = acc[mt][nt] if in_psum else nl.zeros((P, tn), nl.float32, buffer=nl.psum)
                for kt in nl.affine_range(kb // P):
                    psum += nl.matmul(
                        a[kt, :, mt * P : (mt + 1) * P],
                        b[kt, :, nt * tn : (nt + 1) * tn],
                        transpose_x=True,
                    )
                if not in_psum:
                    cols = slice(nt * tn, (nt + 1) * tn)
                    acc[mt, :, cols] = nl.add(acc[mt, :, cols], psum)
        if k == k_blocks - 1:
            for mt in nl.affine_range(mb // P):
                for nt in nl.affine_range(nb // tn):
                    src = acc[mt][nt] if in_psum else acc[mt, :, nt * tn : (nt + 1) * tn]
                    rows = nl.copy(src, dtype=out.dtype)
                    nl.store(
                        out[
                            m * mb + mt * P : m * mb + (mt + 1) * P,
                            n * nb + nt * tn : n * nb + (nt + 1) * tn,
                        ],
                        value=rows,
                    )
            del state[(m, n)]

    def walk(level, index):
        if level == 3:
            compute(index["K"], index["M"], index["N"])
            return
        axis = loop_order[level]
        for i in nl.affine_range(sizes[axis]):
            index[axis] = i
            bound = set(loop_order[: level + 1])
            if axis in "KM" and {"K", "M"} <= bound and not {"K", "M"} <= set(loop_order[:level]):
                state["lhs"] = load_lhs(index["K"], index["M"])
            if axis in "KN" and {"K", "N"} <= bound and not {"K", "N"} <= set(loop_order[:level]):
                state["rhs"] = load_rhs(index["K"], index["N"])
            walk(level + 1, index)

    walk(0, {})
    return out
