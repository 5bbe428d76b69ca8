"""Rewrites: graph restructurings that change which buffers and operators exist.

A rewrite whose pattern is absent returns the IR it was given, unchanged.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Sequence
from typing import Protocol

from kernelopt.ir.derive import TWO_BYTE, derive
from kernelopt.ir.fused_reduce import ActivationReduce
from kernelopt.ir.graph_rewrites import GRAPH_REWRITES
from kernelopt.ir.model import KernelIR, Operator, PhysicalBuffer
from kernelopt.ir.sample import with_default_knobs


class Rewrite(Protocol):
    name: str

    def apply(self, ir: KernelIR) -> KernelIR: ...


def _restructure(
    ir: KernelIR,
    operators: list[Operator],
    drop_buffers: set[str],
    replace: PhysicalBuffer,
    name: str,
) -> KernelIR:
    """The IR with new operators, without ``drop_buffers``; knobs kept where still valid."""
    buffers = tuple(
        replace if b.name == replace.name else b for b in ir.buffers if b.name not in drop_buffers
    )
    scopes = {b: s for b, s in ir.buffer_scopes.items() if b not in drop_buffers}
    fresh = dataclasses.replace(
        ir,
        buffers=buffers,
        operators=tuple(operators),
        buffer_scopes=scopes,
        variant=ir.variant_after(name),
        graph=None,  # the lowering no longer follows the graph: no graph rewrite after this
    )
    return fresh if not derive(fresh)[1] else with_default_knobs(fresh)


class LoadTranspose:
    """A TensorE transpose of a freshly loaded input becomes one transposing DMA load.

    Pattern: ``load x -> sbuf_x -> transpose -> psum_t -> copy -> sbuf_t``.
    Result: ``dma_transpose x -> sbuf_t``; the PSUM buffer and two instructions
    disappear, and so does the SBUF staging buffer when nothing else reads
    it. dma_transpose moves 2-byte elements only: an fp32 input keeps its
    TensorE transpose. When other ops read ``sbuf_x`` too (a norm reads the rows of the x
    a matmul reads transposed), x is loaded twice, once each way.
    """

    name = "LoadTranspose"

    def apply(self, ir: KernelIR) -> KernelIR:
        for op in ir.operators:
            if op.kind != "transpose":
                continue
            source = ir.buffer[op.srcs[0]]
            load = ir.producers.get(source.name)
            readers = [o for o in ir.operators if source.name in o.srcs]
            copies = [o for o in ir.operators if o.srcs == (op.dst,) and o.kind == "copy"]
            if load is None or load.kind != "load" or len(copies) != 1:
                continue
            target = ir.buffer[copies[0].dst]
            if source.dtype not in TWO_BYTE or target.dtype != source.dtype:
                continue  # dma_transpose moves 2-byte elements only, and casts none
            shared = len(readers) > 1
            dp, df = target.axes
            fused = Operator(
                f"load_{load.srcs[0]}_transposed",
                "load_transpose",
                target.name,
                load.srcs,
                ((dp, "partition"), (df, "free")),
            )
            operators: list[Operator] = []
            for o in ir.operators:
                if o is load:
                    operators += [load, fused] if shared else [fused]
                elif o is not op and o is not copies[0]:
                    operators.append(o)
            loaded = dataclasses.replace(target, role="load")
            dropped = {op.dst} if shared else {source.name, op.dst}
            return _restructure(ir, operators, dropped, loaded, self.name)
        return ir


class SbufTranspose:
    """A TensorE transpose of a computed tile becomes one SBUF-to-SBUF transposing DMA.

    Pattern: ``sbuf_x (not a load) -> transpose -> psum_t -> copy -> sbuf_t``.
    Result: ``dma_transpose sbuf_x -> sbuf_t``: the PSUM buffer, the TensorE
    instruction and the copy out of PSUM (on VectorE or ScalarE) disappear; the
    DMA queues move the tile instead, at up to half their copy rate (NEURON.md,
    from the NKI performance guide: dma_transpose SBUF to SBUF "up to 50 %").
    dma_transpose moves 2-byte elements only. Every matching transpose is moved.
    """

    name = "SbufTranspose"

    def apply(self, ir: KernelIR) -> KernelIR:
        moved = ir
        for op in ir.operators:
            if op.kind != "transpose":
                continue
            source = ir.buffer[op.srcs[0]]
            load = ir.producers.get(source.name)
            copies = [o for o in ir.operators if o.srcs == (op.dst,) and o.kind == "copy"]
            if load is None or load.kind == "load" or len(copies) != 1:
                continue  # a loaded tile is LoadTranspose's
            target = moved.buffer[copies[0].dst]
            if source.dtype not in TWO_BYTE or target.dtype != source.dtype:
                continue  # a cast stays with the TensorE transpose's copy out of PSUM
            fused = Operator(
                f"dma_transpose_{target.name.removeprefix('sbuf_')}",
                "sbuf_transpose",
                target.name,
                op.srcs,
                op.roles,
                op.required_tiles,
            )
            operators = [
                fused if o.name == op.name else o
                for o in moved.operators
                if o.name != copies[0].name
            ]
            moved = dataclasses.replace(
                moved,
                buffers=tuple(b for b in moved.buffers if b.name != op.dst),
                operators=tuple(operators),
                buffer_scopes={b: sc for b, sc in moved.buffer_scopes.items() if b != op.dst},
            )
        if moved is ir:
            return ir
        moved = dataclasses.replace(moved, variant=ir.variant_after(self.name), graph=None)
        return moved if not derive(moved)[1] else with_default_knobs(moved)


# Element-wise instructions that may read a PSUM operand (VectorE and ScalarE do).
PSUM_READERS = ("activation", "tensor_scalar", "tensor_tensor", "reciprocal")


class FusedDrain:
    """The element-wise op after a matmul reads its PSUM accumulator directly.

    Pattern: ``matmul -> psum -> drain (copy) -> sbuf -> op`` where ``op`` is
    the only reader of ``sbuf`` and an element-wise instruction (ScalarE and
    VectorE read PSUM). Result: ``op`` reads ``psum``; the copy and the SBUF
    result disappear, so the engines stream each output once instead of twice.
    The accumulator must then hold its whole reduction (its reducing dims are
    pinned FULL): a partial sum drained by add cannot feed an activation.
    Every matching drain is fused.
    """

    name = "FusedDrain"

    def apply(self, ir: KernelIR) -> KernelIR:
        fused = ir
        for drain in ir.operators:
            if drain.kind != "drain":
                continue
            result = drain.dst
            readers = [o for o in fused.operators if result in o.srcs]
            if len(readers) != 1 or readers[0].kind not in PSUM_READERS:
                continue
            if readers[0].attr("reduce_res") is not None:
                continue  # a fused row sum needs its row in one SBUF instruction
            reader = readers[0]
            if any(fused.buffer[s].memory == "psum" for s in reader.srcs):
                continue  # two PSUM operands in one instruction: keep one drain
            psum = fused.buffer[drain.srcs[0]]
            srcs = tuple(psum.name if s == result else s for s in reader.srcs)
            operators = [
                dataclasses.replace(o, srcs=srcs) if o is reader else o
                for o in fused.operators
                if o is not drain
            ]
            pinned = tuple(sorted({*psum.pinned_full, *psum.lifetime_dims}))
            whole = dataclasses.replace(psum, pinned_full=pinned)
            buffers = tuple(
                whole if b.name == psum.name else b for b in fused.buffers if b.name != result
            )
            scopes = {
                b: ({d: v for d, v in sc.items() if d not in pinned} if b == psum.name else sc)
                for b, sc in fused.buffer_scopes.items()
                if b != result
            }
            fused = dataclasses.replace(
                fused, buffers=buffers, operators=tuple(operators), buffer_scopes=scopes
            )
        if fused is ir:
            return ir
        fused = dataclasses.replace(fused, variant=ir.variant_after(self.name), graph=None)
        return fused if not derive(fused)[1] else with_default_knobs(fused)


# Rewrites of the math first: a lowering rewrite drops the graph they rewrite.
REWRITES: dict[str, Rewrite] = {
    r.name: r
    for r in (
        *GRAPH_REWRITES,
        LoadTranspose(),
        SbufTranspose(),
        FusedDrain(),
        ActivationReduce(),
    )
}


def enumerate_rewrite_combinations(
    ir: KernelIR, rewrites: Sequence[Rewrite]
) -> Iterator[tuple[str, KernelIR]]:
    """``(name, ir)`` for every subset of ``rewrites``, dropping repeats of a structure.

    ``"base"`` comes first; a subset is named by its rewrites joined with ``+``.
    """
    seen: list[tuple[object, ...]] = []
    for size in range(len(rewrites) + 1):
        for subset in itertools.combinations(rewrites, size):
            variant = ir
            for rewrite in subset:
                variant = rewrite.apply(variant)
            key = variant.structure_key()
            if key in seen:
                continue
            seen.append(key)
            name = "+".join(r.name for r in subset) if subset else "base"
            yield name, dataclasses.replace(variant, variant=name)


def apply_variant(ir: KernelIR, variant: str) -> KernelIR:
    """The base IR rewritten by the ``+``-joined rewrites named in ``variant``.

    Raises ``KeyError`` for an unknown rewrite and ``ValueError`` for one whose
    pattern this kernel does not contain.
    """
    if variant == "base":
        return ir
    for name in variant.split("+"):
        if name not in REWRITES:
            raise KeyError(name)
        rewritten = REWRITES[name].apply(ir)
        if rewritten.structure_key() == ir.structure_key():
            raise ValueError(name)
        ir = rewritten
    return ir
