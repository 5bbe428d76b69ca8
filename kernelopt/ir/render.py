"""``render_ir``: a valid KernelIR as NKI source, loops kept as loops.

Each buffer becomes one ``nl.ndarray`` of shape (partition tile, tiles held
on the partition dim, tiles held on the free dim x free tile), allocated at
its emission depth; each operator is emitted at its fire depth, before the
loop at that depth or, when it needs work done deeper, after it. An operator
covers the tiles of the dims whose loops are still closed where it fires with
loops of its own (``l<i>``), so the text never grows with the tile count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelopt.ir.derive import Placement, derive, scope_of, writes
from kernelopt.ir.derive import drain_adds as _drain_adds
from kernelopt.ir.engines import engine_plan, scaled_copy
from kernelopt.ir.layout import buffer_dtype, buffer_shape, in_sbuf, instruction_rows
from kernelopt.ir.model import KernelIR, Operator, PhysicalBuffer, Scope
from kernelopt.ir.ops import DTYPES
from kernelopt.ir.render_rows import row_runs
from kernelopt.ir.render_text import Lin, Writer, slice_text, var

# Names the kernel body assigns: an input of one of these names (a [P, 1] input called
# ``col``, biases ``b1``, ``b2`` beside the block loops' ``b1``, ``b2``) is read through
# an alias, since the kernel's parameters must keep the workload's names.
_LOCAL = re.compile(r"(row|col|nl|nisa|nki|[lbt]\d+|f_\w*|(sbuf|psum)_\w*)")


def _hbm_aliases(names: list[str]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for name in names:
        if _LOCAL.fullmatch(name):
            alias = f"hbm_{name}"
            while alias in names or alias in aliases.values():
                alias += "_"
            aliases[name] = alias
    return aliases


class RenderError(ValueError):
    """Only a valid IR renders; the message lists what validity_report reports."""


@dataclass(frozen=True)
class _Site:
    """Which loops are open where an operator fires, and how it names tiles."""

    ir: KernelIR
    placement: Placement
    depth: int

    def dim_index(self, d: str) -> int:
        return int(d[1:])

    def status(self, d: str) -> str:
        pos = self.placement.position
        if pos[f"{d}.tile"] < self.depth:
            return "tile"
        if pos[f"{d}.block"] < self.depth:
            return "block"
        return "none"

    def local_trip(self, d: str) -> int:
        """Trip count of the operator's own loop over ``d`` (0: no loop needed)."""
        st = self.status(d)
        if st == "tile" or self.ir.dim[d].size == 1:
            return 0
        return self.ir.ltiles_per_block[d] if st == "block" else self.ir.dim[d].num_tiles

    def tile_index(self, d: str) -> tuple[Lin, Lin | None]:
        """(global tile index, index within the block) of the tile being handled."""
        i, per = self.dim_index(d), self.ir.ltiles_per_block[d]
        st = self.status(d)
        if self.ir.dim[d].size == 1:
            return Lin(), Lin()  # a [P, 1] column's free dim: no loop, index 0
        if st == "tile":
            return var(f"b{i}") * per + var(f"t{i}"), var(f"t{i}")
        if st == "block":
            return var(f"b{i}") * per + var(f"l{i}"), var(f"l{i}")
        return var(f"l{i}"), None

    def buffer_index(self, buf: PhysicalBuffer, d: str) -> Lin:
        glob, in_block = self.tile_index(d)
        scope = scope_of(self.ir, buf, d)
        # A [P, 1] column's free dim (size 1) has one element: its index is 0 even
        # where a consumer of the column has no loop over that dim.
        if scope == Scope.PER_TILE or self.ir.dim[d].size == 1:
            return Lin()
        if scope == Scope.PER_BLOCK:
            assert in_block is not None
            return in_block
        return glob

    def wide_free(self, buf: PhysicalBuffer, d: str) -> tuple[Lin, Lin, int]:
        """(global start, buffer start, tile count) of every free-dim tile this site covers."""
        st, per = self.status(d), self.ir.ltiles_per_block[d]
        if self.ir.dim[d].size == 1:
            return Lin(), Lin(), 1  # a column's one-element dim prints no loop: index 0
        if st == "tile":
            return self.tile_index(d)[0], self.buffer_index(buf, d), 1
        if st == "block":
            start = var(f"b{self.dim_index(d)}") * per
            scope = scope_of(self.ir, buf, d)
            return start, (Lin() if scope == Scope.PER_BLOCK else start), per
        return Lin(), Lin(), self.ir.dim[d].num_tiles


class _Renderer:
    """The current API (``nki``); ``render_beta1.Beta1Renderer`` prints the same kernel
    in the beta-1 API through the ``HEADER`` and ``isa`` hooks."""

    HEADER = (
        "# Re-render after editing knobs.json, or edit this file by hand.",
        "import nki",
        "import nki.isa as nisa",
        "import nki.language as nl",
    )
    ZEROS: str | None = None  # a constructor that allocates zeroed, instead of a memset
    # A PSUM accumulator of matmuls is not zeroed first: nc_matmul's first write to a
    # fresh tensor overwrites and later ones add (``accumulate=None``, the compiler
    # infers it; aws-neuron/neuron-agentic-development@c793732
    # skills/neuron-nki-writing/references/common-patterns.md: the first K tile's
    # matmul initialises PSUM, "never nisa.memset the PSUM tile before the K loop").
    # A GpSimd memset per accumulator otherwise sits between the drain that frees a
    # PSUM slot and the next accumulation's first matmul.
    PSUM_FIRST_WRITE_OVERWRITES = True

    def __init__(self, ir: KernelIR, placement: Placement) -> None:
        self.ir, self.p = ir, placement
        self.engines = engine_plan(ir)
        self.hbm = _hbm_aliases([t.name for t in ir.inputs])
        self.w = Writer()
        self._open: set[str] = set()  # dims whose loop a run of operators shares
        self._row: str | None = None  # the row offset named last in that shared loop
        used = list(placement.emission.values()) + list(placement.fire.values())
        self.max_depth = max(used)
        self.sequential = {
            d for b in ir.buffers for d in b.lifetime_dims if scope_of(ir, b, d) == Scope.PER_BLOCK
        }

    def render(self) -> str:
        ir, w = self.ir, self.w
        w.line(0, f"# {ir.func_name}: rendered from its KernelIR (variant {ir.variant}).")
        for text in self.HEADER:
            w.line(0, text)
        w.line(0, "")
        w.line(0, "")
        w.line(0, "@nki.jit")
        w.line(0, f"def {ir.func_name}({', '.join(t.name for t in ir.inputs)}):")
        for name, alias in self.hbm.items():
            w.line(4, f"{alias} = {name}")
        out = ir.output
        shape = f"({out.shape[0]}, {out.shape[1]})"
        w.call(
            4,
            f"{out.name} = nl.ndarray",
            [shape, f"dtype={DTYPES[out.dtype]}", "buffer=nl.shared_hbm"],
        )
        self.level(0, 4)
        w.line(4, f"return {out.name}")
        return "\n".join(w.lines) + "\n"

    def level(self, depth: int, indent: int) -> None:
        ir, p = self.ir, self.p
        for buf in ir.buffers:
            if p.emission[buf.name] == depth:
                self.allocate(buf, indent)
        ops = [op for op in ir.operators if p.fire[op.name] == depth]
        self.operators([op for op in ops if not p.after[op.name]], depth, indent)
        if depth < self.max_depth:
            entry = ir.loop_order[depth]
            d, kind = entry.split(".")
            i, dim, trip = int(d[1:]), ir.dim[d], ir.trip(entry)
            if dim.size == 1:
                # A column's one-element dim has nothing to loop over: where its loops
                # sit in loop_order changes no instruction, so it prints no loop.
                self.level(depth + 1, indent)
                self.operators([op for op in ops if p.after[op.name]], depth, indent)
                return
            rng = (
                "nl.sequential_range"
                if kind == "block" and d in self.sequential
                else "nl.affine_range"
            )
            self.w.line(indent, f"for {kind[0]}{i} in {rng}({trip}):")
            self.level(depth + 1, indent + 4)
        self.operators([op for op in ops if p.after[op.name]], depth, indent)

    def allocate(self, buf: PhysicalBuffer, indent: int) -> None:
        ir = self.ir
        shape = ", ".join(str(s) for s in buffer_shape(ir, buf))
        dtype = DTYPES[buffer_dtype(ir, buf)]
        producer = ir.producers.get(buf.name)
        zero = bool(buf.lifetime_dims) or (
            producer is not None and producer.kind == "drain" and _drain_adds(ir, producer)
        )
        if zero and self.PSUM_FIRST_WRITE_OVERWRITES and buf.memory == "psum":
            zero = producer is None or producer.kind != "matmul"
        make = self.ZEROS if zero and self.ZEROS else "nl.ndarray"
        self.w.call(
            indent,
            f"{buf.name} = {make}",
            [f"({shape})", f"dtype={dtype}", f"buffer=nl.{buf.memory}"],
        )
        if zero and make == "nl.ndarray":
            # Accumulators start from zero: matmuls and block drains add into them.
            self.isa(indent, "memset", [f"dst={buf.name}", "value=0.0"])

    def isa(self, indent: int, name: str, args: list[str]) -> None:
        """One ISA call; ``args`` name the destination first (``dst=...``)."""
        self.w.call(indent, f"nisa.{name}", args)

    def local_loops(self, site: _Site, dims: tuple[str, ...], indent: int) -> int:
        for d in dims:
            trip = site.local_trip(d)
            if trip and d not in self._open:
                self.w.line(indent, f"for l{site.dim_index(d)} in nl.affine_range({trip}):")
                indent += 4
        return indent

    def operators(self, ops: list[Operator], depth: int, indent: int) -> None:
        """``ops`` in order, a run of them over the same row tiles in one loop
        (``row_runs``)."""
        site = _Site(self.ir, self.p, depth)
        for dim, run in row_runs(self.ir, ops, site):
            if dim is None:
                self.operator(run[0], depth, indent)
                continue
            inner = self.local_loops(site, (dim,), indent)
            self._open = {dim}
            for op in run:
                self.operator(op, depth, inner)
            self._open, self._row = set(), None

    def operator(self, op: Operator, depth: int, indent: int) -> None:
        site = _Site(self.ir, self.p, depth)
        getattr(self, f"op_{op.kind}")(op, site, indent)

    def _offset(self, indent: int, name: str, expr: Lin) -> Lin:
        """Long HBM offsets get a name of their own so every line stays short."""
        if expr.simple:
            return expr
        text = str(expr)
        if self._open and name == "row":
            # DMAs of one row tile in a shared loop: the same row offset, named once.
            if self._row == text:
                return var(name)
            self._row = text
        self.w.line(indent, f"{name} = {text}")
        return var(name)

    def view(self, site: _Site, buf: PhysicalBuffer, indent: int, wide: str = "") -> str:
        """One tile of ``buf`` as the site sees it, as a 2-D (partition, free) view; with
        ``wide`` naming its free dim, every tile of that dim the site covers at once."""
        dp, df = buf.axes
        tf = self.ir.dim[df].tile
        start, count = site.buffer_index(buf, df), 1
        if df == wide:
            _, start, count = site.wide_free(buf, df)
        f = self._offset(indent, f"f_{buf.name}", start * tf)
        return f"{buf.name}[:, {site.buffer_index(buf, dp)}, {slice_text(f, count * tf)}]"

    def rows_view(self, site: _Site, buf: PhysicalBuffer, indent: int, rows: int) -> str:
        """``rows`` partition-dim tiles of ``buf`` from the ``rows``-th multiple of the
        site's own loop over that dim, as one 3-D (partition, tiles, free) view."""
        dp, df = buf.axes
        name = f"l{site.dim_index(dp)}"
        index = site.buffer_index(buf, dp)
        start = Lin(tuple((v, c * rows if v == name else c) for v, c in index.terms), index.const)
        f = self._offset(indent, f"f_{buf.name}", site.buffer_index(buf, df) * self.ir.dim[df].tile)
        return f"{buf.name}[:, {slice_text(start, rows)}, {slice_text(f, self.ir.dim[df].tile)}]"

    def _dma(self, site: _Site, buf: PhysicalBuffer, hbm: str, indent: int, load: bool) -> None:
        ir = self.ir
        dp, df = buf.axes
        if ir.dim[df].stride:
            # Overlapping tiles are not contiguous in HBM: one transfer per tile.
            indent = self.local_loops(site, (dp, df), indent)
            g_f, b_f, count = site.tile_index(df)[0], site.buffer_index(buf, df), 1
        else:
            indent = self.local_loops(site, (dp,), indent)
            g_f, b_f, count = site.wide_free(buf, df)
        tp, tf = ir.dim[dp].tile, ir.dim[df].tile
        row = self._offset(indent, "row", site.tile_index(dp)[0] * ir.dim[dp].step)
        col = self._offset(indent, "col", g_f * ir.dim[df].step)
        f = self._offset(indent, f"f_{buf.name}", b_f * tf)
        sb = f"{buf.name}[:, {site.buffer_index(buf, dp)}, {slice_text(f, count * tf)}]"
        hb = f"{hbm}[{slice_text(row, tp)}, {slice_text(col, count * tf)}]"
        args = [f"dst={sb}", f"src={hb}"] if load else [f"dst={hb}", f"src={sb}"]
        self.isa(indent, "dma_copy", args)

    def op_load(self, op: Operator, site: _Site, indent: int) -> None:
        self._dma(site, self.ir.buffer[op.dst], self.hbm.get(op.srcs[0], op.srcs[0]), indent, True)

    def op_store(self, op: Operator, site: _Site, indent: int) -> None:
        self._dma(site, self.ir.buffer[op.srcs[0]], op.dst, indent, load=False)

    def op_load_transpose(self, op: Operator, site: _Site, indent: int) -> None:
        ir, buf = self.ir, self.ir.buffer[op.dst]
        dp, df = buf.axes
        indent = self.local_loops(site, (dp, df), indent)
        tp, tf = ir.dim[dp].tile, ir.dim[df].tile
        row = self._offset(indent, "row", site.tile_index(df)[0] * ir.dim[df].step)
        col = self._offset(indent, "col", site.tile_index(dp)[0] * ir.dim[dp].step)
        args = [
            f"dst={self.view(site, buf, indent)}",
            f"src={self.hbm.get(op.srcs[0], op.srcs[0])}[{slice_text(row, tf)}, {slice_text(col, tp)}]",
        ]
        self.isa(indent, "dma_transpose", args)

    def op_sbuf_transpose(self, op: Operator, site: _Site, indent: int) -> None:
        b = self.ir.buffer
        indent = self.local_loops(site, op.dims, indent)
        dst, src = self.view(site, b[op.dst], indent), self.view(site, b[op.srcs[0]], indent)
        self.isa(indent, "dma_transpose", [f"dst={dst}", f"src={src}"])

    def op_matmul(self, op: Operator, site: _Site, indent: int) -> None:
        b = self.ir.buffer
        indent = self.local_loops(site, op.dims, indent)
        args = [
            f"dst={self.view(site, b[op.dst], indent)}",
            f"stationary={self.view(site, b[op.srcs[0]], indent)}",
            f"moving={self.view(site, b[op.srcs[1]], indent)}",
        ]
        self.isa(indent, "nc_matmul", args)

    def op_transpose(self, op: Operator, site: _Site, indent: int) -> None:
        b = self.ir.buffer
        indent = self.local_loops(site, op.dims, indent)
        dst, data = self.view(site, b[op.dst], indent), self.view(site, b[op.srcs[0]], indent)
        args = [f"dst={dst}", f"data={data}"]
        self.isa(indent, "nc_transpose", args)

    def _elementwise(
        self, op: Operator, site: _Site, indent: int, head: str, args: list[str]
    ) -> None:
        if self.engines.get(op.name) == "scalar" and head in (
            "nisa.tensor_scalar",
            "nisa.tensor_copy",
        ):
            args = [*args, "engine=nisa.engine.scalar"]
        dp, df = self.ir.buffer[op.dst].axes
        # One instruction spans the free-dim tiles the site covers when every operand
        # is in SBUF (they are contiguous there; a PSUM access stays within one bank):
        # the ~100-cycle fixed cost is paid once, not once per tile.
        wide = df if in_sbuf(self.ir, op) and site.local_trip(df) > 1 else ""
        buffers = (*writes(op), *op.srcs)
        rows = instruction_rows(self.ir, op, site.local_trip(dp))
        if rows > 1:
            # A run of partition-dim tiles of one PSUM bank per instruction.
            i = site.dim_index(dp)
            self.w.line(indent, f"for l{i} in nl.affine_range({site.local_trip(dp) // rows}):")
            indent = self.local_loops(site, (df,), indent + 4)
            views = {
                name: self.rows_view(site, self.ir.buffer[name], indent, rows) for name in buffers
            }
        else:
            indent = self.local_loops(site, (dp,) if wide else (dp, df), indent)
            views = {name: self.view(site, self.ir.buffer[name], indent, wide) for name in buffers}
        self.isa(indent, head.removeprefix("nisa."), [a.format(**views) for a in args])

    def op_copy(self, op: Operator, site: _Site, indent: int) -> None:
        self._elementwise(
            op, site, indent, "nisa.tensor_copy", [f"dst={{{op.dst}}}", f"src={{{op.srcs[0]}}}"]
        )

    def op_drain(self, op: Operator, site: _Site, indent: int) -> None:
        dst, src = op.dst, op.srcs[0]
        if _drain_adds(self.ir, op):
            args = [f"dst={{{dst}}}", f"data1={{{dst}}}", f"data2={{{src}}}", "op=nl.add"]
            self._elementwise(op, site, indent, "nisa.tensor_tensor", args)
        else:
            self.op_copy(op, site, indent)

    def op_tensor_tensor(self, op: Operator, site: _Site, indent: int) -> None:
        args = [
            f"dst={{{op.dst}}}",
            f"data1={{{op.srcs[0]}}}",
            f"data2={{{op.srcs[1]}}}",
            f"op=nl.{op.attr('op')}",
        ]
        self._elementwise(op, site, indent, "nisa.tensor_tensor", args)

    def _operand(self, op: Operator, role: str) -> str | None:
        """A scalar operand as source text: its number, or the placeholder of its column."""
        columns = op.attr("columns", ())
        if role in columns:
            return f"{{{op.srcs[len(op.srcs) - len(columns) + columns.index(role)]}}}"
        value = op.attr(role)
        return None if value is None else repr(value)

    def op_tensor_scalar(self, op: Operator, site: _Site, indent: int) -> None:
        args = [f"dst={{{op.dst}}}", f"data={{{op.srcs[0]}}}"]
        for i in ("0", "1"):
            if op.attr("op" + i) is None:
                continue
            args += [
                f"op{i}=nl.{op.attr('op' + i)}",
                f"operand{i}={self._operand(op, 'operand' + i)}",
            ]
            if op.attr("reverse" + i):
                args.append(f"reverse{i}=True")
        self._elementwise(op, site, indent, "nisa.tensor_scalar", args)

    def op_reciprocal(self, op: Operator, site: _Site, indent: int) -> None:
        args = [f"dst={{{op.dst}}}", f"data={{{op.srcs[0]}}}"]
        self._elementwise(op, site, indent, "nisa.reciprocal", args)

    def op_tensor_reduce(self, op: Operator, site: _Site, indent: int) -> None:
        ir = self.ir
        dst, data = ir.buffer[op.dst], ir.buffer[op.srcs[0]]
        indent = self.local_loops(site, dst.axes, indent)
        dp, df = data.axes
        # The reduced dim is pinned FULL on the data buffer: the whole row is one view.
        row = f"{data.name}[:, {site.buffer_index(data, dp)}, 0:{ir.dim[df].size}]"
        args = [
            f"dst={self.view(site, dst, indent)}",
            f"op=nl.{op.attr('op')}",
            f"data={row}",
            "axis=1",
            "keepdims=True",
        ]
        if op.attr("negate"):
            args.append("negate=True")
        self.isa(indent, "tensor_reduce", args)

    def op_activation(self, op: Operator, site: _Site, indent: int) -> None:
        if scaled_copy(op) and self.engines.get(op.name) == "vector":
            # data * scale on VectorE: tensor_scalar's multiply (engines.scaled_copy).
            scale = self._operand(op, "scale") or repr(1.0)
            args = [f"dst={{{op.dst}}}", f"data={{{op.srcs[0]}}}", "op0=nl.multiply"]
            self._elementwise(op, site, indent, "nisa.tensor_scalar", [*args, f"operand0={scale}"])
            return
        args = [f"dst={{{op.dst}}}", f"op=nl.{op.attr('op')}", f"data={{{op.srcs[0]}}}"]
        bias, scale = self._operand(op, "bias"), self._operand(op, "scale")
        if bias is not None:
            args.append(f"bias={bias}")
        if scale is not None and scale != repr(1.0):
            args.append(f"scale={scale}")
        res = op.attr("reduce_res")
        if res is None:
            self._elementwise(op, site, indent, "nisa.activation", args)
            return
        # The row's sum in the same instruction (ActivationReduce). activation_reduce is
        # in both APIs (the current one also spells it activation(reduce_cmd=reset_reduce,
        # ...)), so both renderings issue the same instruction.
        args += ["reduce_op=nl.add", f"reduce_res={{{res}}}"]
        self._elementwise(op, site, indent, "nisa.activation_reduce", args)

    def op_fused_reduce(self, op: Operator, site: _Site, indent: int) -> None:
        """Nothing to issue: the activation that produced the row wrote its sum."""


APIS = ("nki", "beta1")


def render_ir(ir: KernelIR, api: str = "nki") -> str:
    """NKI source for a valid IR; the same IR always gives byte-identical text.

    ``api="beta1"`` prints the same kernel in the NKI beta-1 API (``neuronxcc.nki``,
    SDKs before 2.28): the same loops and the same instructions (render_beta1.py).
    """
    if api not in APIS:
        raise ValueError(f"render_ir: api must be one of {', '.join(APIS)}, not {api!r}")
    placement, failures = derive(ir)
    if placement is None:
        problems = "; ".join(f"{f.check}({f.buffer}): {f.detail}" for f in failures)
        raise RenderError(f"cannot render an invalid KernelIR: {problems}")
    if api == "beta1":
        from kernelopt.ir.render_beta1 import Beta1Renderer

        return Beta1Renderer(ir, placement).render()
    return _Renderer(ir, placement).render()
