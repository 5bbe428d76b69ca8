"""A blocked GEMM in the beta-1 API, after the public nki-autotune template's idea.

out = lhsT.T @ rhs (``transposed_lhs=True``) or lhs @ rhs. The three
dimensions are cut into ``k_blocks``/``m_blocks``/``n_blocks`` blocks and
walked in ``loop_order`` (a permutation of "MNK", outermost first). An
operand is loaded as soon as its outer axis is bound, spanning its inner
axis whole, when that block fits in ``EARLY_BYTES`` per partition (the
template's load positions, of which a tuned config picks the best);
otherwise at the loop that fixes both its indices;
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
EARLY_BYTES = 48 * 1024  # per partition: the most a hoisted operand block may take


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

    def load(which, k_tile0, k_tiles, o0, width):
        """An operand block: K tiles [k_tile0, +k_tiles) x columns [o0, +width) of M or N."""
        src = rhs if which == "rhs" else lhs
        # One allocation per operand, as the template's lhs and rhs buffers are
        # distinct tensors: each rotates through its own physical copies.
        if which == "rhs":
            block = nl.ndarray((k_tiles, nl.par_dim(P), width), dtype=rhs.dtype, buffer=nl.sbuf)
        else:
            block = nl.ndarray((k_tiles, nl.par_dim(P), width), dtype=lhs.dtype, buffer=nl.sbuf)
        for kt in nl.affine_range(k_tiles):
            k0 = (k_tile0 + kt) * P
            if which == "rhs" or transposed_lhs:
                block[kt] = nl.load(src[k0 : k0 + P, o0 : o0 + width])
            else:
                # lhs rows arrive transposed: the DMA engine's transpose.
                block[kt] = nl.load_transpose2d(lhs[o0 : o0 + width, k0 : k0 + P])
        return (block, k_tile0, o0)

    def early(other):
        """Load an operand as soon as its outer axis is bound, spanning its inner axis
        whole, when that fits (a hoisted load: reused across the loop between)."""
        outer = "K" if loop_order.index("K") < loop_order.index(other) else other
        size = {"M": (mb, m_size), "N": (nb, n_size)}[other]
        tiles, width = (k_size // P, size[0]) if outer == other else (kb // P, size[1])
        return outer if tiles * width * rhs.dtype.itemsize <= EARLY_BYTES else None

    plan = {"lhs": early("M"), "rhs": early("N")}

    def load_at(axis, index, level):
        for which, other in (("lhs", "M"), ("rhs", "N")):
            bound = set(loop_order[: level + 1])
            if plan[which] == axis:
                if axis == "K":  # all of M (or N) for this K block
                    width = m_size if other == "M" else n_size
                    state[which] = load(which, index["K"] * (kb // P), kb // P, 0, width)
                else:  # all of K for this M (or N) block
                    width = mb if other == "M" else nb
                    state[which] = load(which, 0, k_size // P, index[other] * width, width)
            elif plan[which] is None and axis in ("K", other) and {"K", other} <= bound:
                width = mb if other == "M" else nb
                state[which] = load(
                    which, index["K"] * (kb // P), kb // P, index[other] * width, width
                )

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
        (a, a_k0, a_m0), (b, b_k0, b_n0) = state["lhs"], state["rhs"]
        acc = result_block(m, n)
        for mt in nl.affine_range(mb // P):
            for nt in nl.affine_range(nb // tn):
                psum = acc[mt][nt] if in_psum else nl.zeros((P, tn), nl.float32, buffer=nl.psum)
                for kt in nl.affine_range(kb // P):
                    row = k * (kb // P) + kt
                    am, bn = m * mb - a_m0 + mt * P, n * nb - b_n0 + nt * tn
                    psum += nl.matmul(
                        a[row - a_k0, :, am : am + P],
                        b[row - b_k0, :, bn : bn + tn],
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
            load_at(axis, index, level)
            walk(level + 1, index)

    walk(0, {})
    return out
