"""The readable dump of a KernelIR (its ``repr``): knob dicts key off these names."""

from __future__ import annotations

from kernelopt.ir.model import KernelIR, Scope

SMALL_TILE = 32  # a reducing dim cut finer than this uses a quarter of TensorE's rows or less


def describe(ir: KernelIR) -> str:
    lines = [f"KernelIR {ir.func_name} (variant: {ir.variant})", "dimensions:"]
    for d in ir.dims:
        role = "reducing" if d.reducing else "parallel"
        overlap = f" stride={d.stride} (overlapping tiles)" if d.stride else ""
        lines.append(
            f"  {d.name}: size={d.size} tile={d.tile} num_tiles={d.num_tiles}{overlap} ({role})"
        )
        if d.reducing and d.tile < SMALL_TILE < d.size:
            # Overlapping tiles would sum their shared rows twice: say what it costs.
            lines.append(
                f"    note: {d.size} has no divisor from {SMALL_TILE} to 128, so {d.name} is "
                f"reduced {d.tile} at a time; the kernels are correct but slow (a size "
                "with a divisor near 128 tiles far better)"
            )
    lines.append("physical_buffers:")
    for b in ir.buffers:
        axes = " x ".join(f"{d}:{ir.dim[d].tile}" for d in b.axes)
        extra = ""
        if b.lifetime_dims:
            extra += f" accumulates over {', '.join(b.lifetime_dims)}"
        if b.pinned_full:
            extra += f" ({', '.join(b.pinned_full)} pinned FULL)"
        lines.append(f"  {b.name}: {b.memory} {b.dtype} tile [{axes}] {b.role}{extra}")
    lines.append("operators:")
    for op in ir.operators:
        roles = " ".join(f"{d}={r}" for d, r in op.roles)
        attrs = "".join(f" {k}={v}" for k, v in op.attrs)
        lines.append(f"  {op.name}: {op.kind}({', '.join(op.srcs)}) -> {op.dst} [{roles}]{attrs}")
    lines.append("knobs:")
    lines.append(f"  loop_order: {list(ir.loop_order)}")
    blocks = ", ".join(f"{d}: {n}" for d, n in ir.ltiles_per_block.items())
    lines.append(f"  ltiles_per_block: {{{blocks}}}")
    lines.append("  buffer_scopes:")
    for buf, scopes in ir.buffer_scopes.items():
        text = ", ".join(f"{d}: {Scope(s).value}" for d, s in scopes.items())
        lines.append(f"    {buf}: {{{text}}}")
    return "\n".join(lines)
