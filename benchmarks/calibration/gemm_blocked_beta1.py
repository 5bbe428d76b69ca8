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

With ``lhs_transpose="tensor"`` an lhs block (``transposed_lhs=False``) is
transposed as the template does it (``SBUFTensor.tile_transpose``,
``autotune/core/tensor.py`` @1345cde, called by ``MetaGEMM.maybe_init`` in
``autotune/gemm/kernels.py`` @1433f19 right after the block's load): each
128 x 128 tile in place, one ``nc_transpose`` into its own [128, 128] PSUM
tile (the input dtype on NeuronCore-v3, fp32 before) and one ``nl.copy``
back, no batching of several transposes into one PSUM tile or one copy.
``transpose_order="load"`` issues them as the template's program does, all
of a block's before its matmuls; ``"use"`` issues each ``transpose_ahead``
matmuls before the first that reads it, the order a compiler that
interleaves them would run (the model's list scheduler places instructions
in program order and does not reorder them so).

Not as the template: by default (``lhs_transpose="dma"``) an lhs block
arrives transposed by the DMA engine; loads move one [128, block] row of
tiles per DMA (the template issues one DMA per 128 x 128 or 128 x 512 tile);
each output block accumulates over its K blocks in PSUM when every output
block alive across the K loop fits in PSUM's eight banks, else in an fp32
SBUF block (each K block drained into it) - the template drains every K
block into an SBUF result; it is cast and stored once K is done.
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
    transpose_order="load",
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
            # The template's SBUFTensor.load then tile_transpose, right at the load: lhs
            # rows loaded as they lie (M on partitions), then every 128 x 128 tile flipped
            # in place, one nc_transpose into its own [128, 128] PSUM tile in the input
            # dtype and one nl.copy back over the tile it came from ("load"), or each
            # just ahead of its first matmul ("use", flip_ahead).
            k_cols = slice(k_tile0 * P, (k_tile0 + k_tiles) * P)
            tiles = nl.ndarray(
                (width // P, nl.par_dim(P), k_tiles * P), dtype=lhs.dtype, buffer=nl.sbuf
            )
            for mt in nl.affine_range(width // P):
                tiles[mt] = nl.load(lhs[o0 + mt * P : o0 + (mt + 1) * P, k_cols])
            state["unflipped"] = {
                (mt, kt): tiles for mt in range(width // P) for kt in range(k_tiles)
            }
            if transpose_order == "load":
                for mt in nl.affine_range(width // P):
                    for kt in nl.affine_range(k_tiles):
                        flip(mt, kt)
            return (tiles, k_tile0, o0, True)
        for kt in nl.affine_range(k_tiles):
            k0 = (k_tile0 + kt) * P
            if which == "rhs" or transposed_lhs:
                block[kt] = nl.load(src[k0 : k0 + P, o0 : o0 + width])
            else:
                # lhs rows arrive transposed: the DMA engine's transpose.
                block[kt] = nl.load_transpose2d(lhs[o0 : o0 + width, k0 : k0 + P])
        return (block, k_tile0, o0, False)

    def flip(mt, kt):
        """Transpose lhs tile (M tile, K tile) of the current block in place."""
        tiles = state["unflipped"].pop((mt, kt))
        flipped = nisa.nc_transpose(tiles[mt, :, kt * P : (kt + 1) * P])
        tiles[mt, :, kt * P : (kt + 1) * P] = nl.copy(flipped, dtype=lhs.dtype)

    def flip_ahead(uses, step):
        """``transpose_order="use"``: the transposes of the next ``transpose_ahead``
        tiles the matmuls will read, in the order they read them."""
        for tile in uses[step : step + transpose_ahead + 1]:
            if tile in state["unflipped"]:
                flip(*tile)

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
        # The lhs tiles in the order the matmuls below read them.
        uses = [
            ((m * mb - a_m0) // P + mt, k * (kb // P) + kt - a_k0)
            for mt in range(mb // P)
            for nt in range(nb // tn)
            for kt in range(kb // P)
        ]
        step = 0
        for mt in nl.affine_range(mb // P):
            for nt in nl.affine_range(nb // tn):
                psum = acc[mt][nt] if in_psum else nl.zeros((P, tn), nl.float32, buffer=nl.psum)
                for kt in nl.affine_range(kb // P):
                    row = k * (kb // P) + kt
                    am, bn = m * mb - a_m0 + mt * P, n * nb - b_n0 + nt * tn
                    if a_tiled:  # [M tile, K on partitions, K tile's M columns]
                        flip_ahead(uses, step)
                        stationary = a[am // P, :, (row - a_k0) * P : (row - a_k0 + 1) * P]
                    else:
                        stationary = a[row - a_k0, :, am : am + P]
                    step += 1
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
