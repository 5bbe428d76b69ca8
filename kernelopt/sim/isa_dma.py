"""DMA calls of the simulator's ``nki.isa``: ``dma_copy`` and ``dma_transpose``."""

from __future__ import annotations

from typing import Any

from kernelopt.sim.isa_base import IsaCore
from kernelopt.sim.tensor import Tile


class DmaCalls(IsaCore):
    """The calls the DMA queues run."""

    def dma_copy(
        self,
        dst: Any,
        src: Any,
        dst_rmw_op: Any = None,
        oob_mode: Any = None,
        dge_mode: Any = None,
        name: str | None = None,
    ) -> None:
        m, op = self.m, "dma_copy"
        dst = self._tile(op, "dst", dst)
        src = self._tile(op, "src", src)
        if dst.shape != src.shape:
            squeeze = tuple(d for d in dst.shape if d != 1) == tuple(d for d in src.shape if d != 1)
            if not squeeze:
                m.fail("isa", f"{op}: shape mismatch: dst {dst.shape} vs src {src.shape}")
        rmw = None if dst_rmw_op is None else self._op(op, dst_rmw_op, 2)
        values = m.read(src, op)
        reads = [src]
        if rmw is not None:
            # Read-modify-write: dst = dst <op> src, done by the DMA engine.
            old = m.read(dst, op)
            reads.append(dst)
            if values is not None:
                values = rmw.fn(old, values.reshape(dst.shape))
        m.write(dst, None if values is None else values.reshape(dst.shape))
        # Descriptors of an indirect access depend on values read at run time: software
        # descriptor generation (nki.isa.dma_copy: hardware DGE needs static offsets).
        runtime = src.via is not None or dst.via is not None
        self._emit_dma(
            op,
            dst,
            src,
            1.0,
            reads,
            software_dge=_software_dge(dge_mode) or runtime,
            precomputed=_precomputed(dge_mode) and not runtime,
        )

    def dma_transpose(
        self,
        dst: Any,
        src: Any,
        axes: Any = None,
        priority: Any = None,
        dge_mode: Any = None,
        oob_mode: Any = None,
        name: str | None = None,
    ) -> None:
        # Beta 1's dma_transpose takes dtype=, "data type to cast the output type to"
        # (the NKI reference of neuronxcc.nki): there the DMA casts.
        cast = self.m.beta1 is not None
        self.transpose_by_dma(dst, src, axes, dge_mode=dge_mode, cast=cast)

    def transpose_by_dma(
        self, dst: Any, src: Any, axes: Any = None, dge_mode: Any = None, cast: bool = False
    ) -> None:
        """``dma_transpose``; with ``cast`` the DMA converts to dst's dtype, as
        ``load_transpose2d(dtype=)`` does in both APIs ("data type to cast the output
        type to", nki.language.load_transpose2d, Trn2/Trn3 and neuronxcc.nki pages)."""
        m, op = self.m, "dma_transpose"
        dst = self._tile(op, "dst", dst)
        src = self._tile(op, "src", src)
        self._in(op, "dst", dst, "sbuf")
        self._in(op, "src", src, "hbm", "sbuf")
        # The documented permutations: [1, 0], [2, 1, 0] and [3, 1, 2, 0].
        allowed = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}
        if src.ndim not in allowed:
            m.fail("isa", f"{op}: 2-D to 4-D tiles only, got src {src.shape}")
        perm = allowed[src.ndim] if axes is None else tuple(axes)
        if perm != allowed[src.ndim]:
            m.fail(
                "isa",
                f"{op}: axes {perm} not supported for a {src.ndim}-D tile (use {allowed[src.ndim]})",
            )
        if dst.dtype != src.dtype and not cast:
            m.fail("isa", f"{op}: dtypes must match: dst {dst.dtype} vs src {src.dtype}")
        expected = tuple(src.shape[a] for a in perm)
        if dst.shape != expected:
            m.fail("isa", f"{op}: shape mismatch: dst {dst.shape}, expected {expected}")
        values = m.read(src, op)
        m.write(dst, None if values is None else values.transpose(perm))
        p = m.params
        eff = (
            p.dma_transpose_hbm_efficiency
            if src.buffer.kind == "hbm"
            else (p.dma_transpose_sbuf_efficiency)
        )
        # The DMA engine transposes fixed blocks of source rows x columns; the
        # block, not the strided source row, is the unit each descriptor moves.
        block = p.dma_transpose_block_rows * p.dma_transpose_block_columns * src.dtype.itemsize
        self._emit_dma(
            op,
            dst,
            src,
            eff,
            row_bytes=min(block, src.nbytes),
            software_dge=_software_dge(dge_mode),
            precomputed=_precomputed(dge_mode),
        )

    def _emit_dma(
        self,
        op: str,
        dst: Tile,
        src: Tile,
        efficiency: float,
        reads: list[Tile] | None = None,
        row_bytes: int | None = None,
        software_dge: bool = False,
        precomputed: bool = False,
    ) -> None:
        self._emit(
            op,
            "dma",
            reads or [src],
            [dst],
            partitions=dst.partitions,
            free=dst.free_size,
            nbytes=max(src.nbytes, dst.nbytes),
            row_bytes=min(src.row_bytes(), dst.row_bytes()) if row_bytes is None else row_bytes,
            hbm_read=src.nbytes if src.buffer.kind == "hbm" else 0,
            hbm_write=dst.nbytes if dst.buffer.kind == "hbm" else 0,
            transpose_efficiency=efficiency,
            software_dge=software_dge,
            precomputed_descriptors=precomputed,
        )


def _software_dge(mode: Any) -> bool:
    """Whether ``dge_mode`` asks for descriptors generated in software on GpSimd
    (swdge); unknown and hwdge get hardware descriptor generation on Trn2."""
    return str(mode) == "dge_mode.swdge"


def _precomputed(mode: Any) -> bool:
    """Whether ``dge_mode`` is none: descriptors pre-computed on the host and read
    from HBM, no generation on device (the DGE deep dive, aws-neuron-sdk @f252115
    nki/deep-dives/nki-dge.rst: "Lowest per-transfer latency"). A dynamic address
    cannot be pre-computed, so an indirect access keeps software generation."""
    return str(mode) == "dge_mode.none"
