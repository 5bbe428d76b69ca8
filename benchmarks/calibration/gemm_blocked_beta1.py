"""A blocked GEMM in the beta-1 API, after the public nki-autotune GEMM template.

The template (awslabs/nki-autotune ``autotune/gemm/kernels.py`` ``MetaGEMM``
and ``autotune/gemm/config.py``; its tuned configurations are the Trn2
scoreboard ``autotune/gemm/trn2-scoreboard.md`` @616e222): out = lhsT.T @ rhs
(``transposed_lhs=True``) or lhs @ rhs. The three dimensions are cut into
``k_blocks``/``m_blocks``/``n_blocks`` blocks and walked in ``loop_order`` (a
permutation of "MNK", outermost first). Each operand is loaded at a position
the tuner also searched, ``lhs_position``/``rhs_position``, relative to the
operand's two loops as the template's config counts it: 0 before both (the
whole operand, loaded once), 1 between them (all of the inner axis for one
block of the outer), 2 inside both (one block). An axis whose loop encloses
the load is one block, an axis whose loop does not is loaded whole. Without
positions, an operand is hoisted to its outer loop when that block fits in
``EARLY_BYTES`` per partition, else loaded inside both loops.

Not as the template: an lhs block (``transposed_lhs=False``) arrives
transposed by the DMA engine unless ``lhs_transpose="tensor"`` (the
template's ``tile_transpose``: 128 x 128 TensorE transposes through PSUM,
copied back to SBUF); loads move one [128, block] row of tiles per DMA
(the template issues one DMA per 128 x 128 or 128 x 512 tile); each output
block accumulates over its K blocks in PSUM when every output block alive
across the K loop fits in PSUM's eight banks, else in an fp32 SBUF block
(each K block drained into it) - the template drains every K block into an
SBUF result; it is cast and stored once K is done.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128
TILE_N = 512
EARLY_BYTES = 48 * 1024  # per partition: the most a hoisted operand block may take


@nki.jit
def gemm(
    lhs,
    rhs,
    loop_order="MNK",
    k_blocks=1,
    m_blocks=1,
    n_blocks=1,
    transposed_lhs=True,
    lhs_position=None,
    rhs_position=None,
    lhs_transpose="dma",
    transpose_ahead=2,
):
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
        if which == "lhs" and not transposed_lhs and lhs_transpose == "tensor":
            # The template's tile_transpose: lhs rows loaded as they lie, each 128 x 128
            # tile flipped by TensorE into PSUM and copied back to SBUF.
            natural = nl.ndarray(
                (width // P, nl.par_dim(P), k_tiles * P), dtype=lhs.dtype, buffer=nl.sbuf
            )
            k_cols = slice(k_tile0 * P, (k_tile0 + k_tiles) * P)
            for mt in nl.affine_range(width // P):
                natural[mt] = nl.load(lhs[o0 + mt * P : o0 + (mt + 1) * P, k_cols])
            # One slot per (M tile, K tile), as the template's tile array. The
            # transposes are issued where the compiler places them, interleaved with
            # the matmuls (``transpose_ahead`` tiles before first use), not all up front.
            tiles = nl.ndarray(
                ((width // P) * k_tiles, nl.par_dim(P), P), dtype=lhs.dtype, buffer=nl.sbuf
            )
            state["transposes"] = {"natural": natural, "tiles": tiles, "k_tiles": k_tiles}
            state["transposes"].update(count=(width // P) * k_tiles, issued=0)
            return (tiles, k_tile0, o0, k_tiles)
        for kt in nl.affine_range(k_tiles):
            k0 = (k_tile0 + kt) * P
            if which == "rhs" or transposed_lhs:
                block[kt] = nl.load(src[k0 : k0 + P, o0 : o0 + width])
            else:
                # lhs rows arrive transposed: the DMA engine's transpose.
                block[kt] = nl.load_transpose2d(lhs[o0 : o0 + width, k0 : k0 + P])
        return (block, k_tile0, o0, None)

    def transposed(index):
        """The lhs tile at ``index`` (M tile x K tiles + K tile) of the current block,
        transposing it and the next ``transpose_ahead`` on TensorE if not yet done."""
        job = state["transposes"]
        while job["issued"] <= min(index + transpose_ahead, job["count"] - 1):
            mt, kt = divmod(job["issued"], job["k_tiles"])
            flipped = nisa.nc_transpose(job["natural"][mt, :, kt * P : (kt + 1) * P])
            job["tiles"][job["issued"]] = nl.copy(flipped, dtype=lhs.dtype)
            job["issued"] += 1
        return job["tiles"][index]

    def early(other):
        """Load an operand as soon as its outer axis is bound, spanning its inner axis
        whole, when that fits (a hoisted load: reused across the loop between)."""
        outer = "K" if loop_order.index("K") < loop_order.index(other) else other
        size = {"M": (mb, m_size), "N": (nb, n_size)}[other]
        tiles, width = (k_size // P, size[0]) if outer == other else (kb // P, size[1])
        return outer if tiles * width * rhs.dtype.itemsize <= EARLY_BYTES else None

    def absolute(relative, other):
        """The template's relative load position (0: before both of the operand's
        loops, 1: between them, 2: inside both) as a loop depth 0..3."""
        depths = sorted((loop_order.index("K"), loop_order.index(other)))
        return (0, depths[0] + 1, depths[1] + 1)[relative]

    def heuristic(other):
        axis = early(other)
        if axis is None:
            return max(loop_order.index("K"), loop_order.index(other)) + 1
        return loop_order.index(axis) + 1

    plan = {
        "lhs": heuristic("M") if lhs_position is None else absolute(lhs_position, "M"),
        "rhs": heuristic("N") if rhs_position is None else absolute(rhs_position, "N"),
    }

    def load_at(depth, index):
        """Load each operand planned at this loop depth: its bound axes one block,
        its unbound axes whole."""
        bound = set(loop_order[:depth])
        for which, other in (("lhs", "M"), ("rhs", "N")):
            if plan[which] != depth:
                continue
            block = {"M": mb, "N": nb}[other]
            whole = {"M": m_size, "N": n_size}[other]
            if "K" in bound:
                k_tile0, k_tiles = index["K"] * (kb // P), kb // P
            else:
                k_tile0, k_tiles = 0, k_size // P
            o0, width = (index[other] * block, block) if other in bound else (0, whole)
            state[which] = load(which, k_tile0, k_tiles, o0, width)

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
        (a, a_k0, a_m0, a_tiled), (b, b_k0, b_n0, _) = state["lhs"], state["rhs"]
        acc = result_block(m, n)
        for mt in nl.affine_range(mb // P):
            for nt in nl.affine_range(nb // tn):
                psum = acc[mt][nt] if in_psum else nl.zeros((P, tn), nl.float32, buffer=nl.psum)
                for kt in nl.affine_range(kb // P):
                    row = k * (kb // P) + kt
                    am, bn = m * mb - a_m0 + mt * P, n * nb - b_n0 + nt * tn
                    if a_tiled is None:
                        stationary = a[row - a_k0, :, am : am + P]
                    else:
                        stationary = transposed((am // P) * a_tiled + row - a_k0)
                    psum += nl.matmul(
                        stationary,
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
            load_at(level + 1, index)
            walk(level + 1, index)

    index = {}
    load_at(0, index)
    walk(0, index)
    return out
