"""Mechanical lowering of the three knobs: emission depths, fire depths, placement.

A depth counts open loops: depth 0 is outside every loop, depth ``i + 1`` is
inside the ``i``-th entry of ``loop_order``. Every rule below either derives a
value or records a ``Failure``; the validity report and the sampler both run
this one function, so what samples is exactly what validates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from kernelopt.ir.model import KernelIR, Operator, PhysicalBuffer, Scope

_SCOPE_VALUES = tuple(s.value for s in Scope)
MATMUL_DTYPES = ("bfloat16", "float16", "float32", "float8_e4m3")
TWO_BYTE = ("bfloat16", "float16")


@dataclass(frozen=True)
class Failure:
    """One broken rule: which check, on what (buffer, operator or knob), and why."""

    check: str
    buffer: str
    detail: str


class Bound(NamedTuple):
    """One side of an emission interval and the (dim, scope) that imposes it (a tuple:
    intervals are narrowed millions of times while a pool is drawn)."""

    depth: int
    dim: str | None
    scope: Scope | None


@dataclass(frozen=True)
class Placement:
    """Where everything goes once the knobs are derived."""

    position: dict[str, int]  # "d0.block" -> index in loop_order
    emission: dict[str, int]  # buffer -> depth of its allocation
    fire: dict[str, int]  # operator -> depth of its instruction
    after: dict[str, bool]  # operator sits after the loop at its depth (needs deeper work)
    depth: int  # number of loops


def scope_of(ir: KernelIR, buf: PhysicalBuffer, dim: str) -> Scope:
    if dim in buf.pinned_full:
        return Scope.FULL
    return ir.buffer_scopes[buf.name][dim]


def loop_positions(ir: KernelIR) -> tuple[dict[str, int] | None, list[Failure]]:
    """``loop_order`` must hold each ``{d}.block`` and ``{d}.tile`` once, block first."""
    expected = [f"{d.name}.{k}" for d in ir.dims for k in ("block", "tile")]
    order = list(ir.loop_order)
    problems: list[str] = []
    unknown = [e for e in order if e not in expected]
    if unknown:
        problems.append(f"unknown entries {unknown}")
    missing = [e for e in expected if e not in order]
    if missing:
        problems.append(f"missing entries {missing}")
    repeated = sorted({e for e in order if order.count(e) > 1})
    if repeated:
        problems.append(f"repeated entries {repeated}")
    if not problems:
        late = [
            d.name
            for d in ir.dims
            if order.index(f"{d.name}.tile") < order.index(f"{d.name}.block")
        ]
        if late:
            problems.append(f"{', '.join(f'{d}.tile' for d in late)} must come after its .block")
    if problems:
        return None, [Failure("loop_order", "loop_order", "; ".join(problems))]
    return {e: i for i, e in enumerate(order)}, []


def knob_key_failures(ir: KernelIR) -> list[Failure]:
    """Scope dicts name exactly each buffer's knob dims; block sizes divide tile counts."""
    failures: list[Failure] = []
    for d in ir.dims:
        n = ir.ltiles_per_block.get(d.name)
        if n is None or n not in d.divisors():
            failures.append(
                Failure(
                    "ltiles_per_block",
                    d.name,
                    f"ltiles_per_block[{d.name}] is {n!r}; it must divide the "
                    f"{d.num_tiles} tiles of {d.name}: one of {list(d.divisors())}",
                )
            )
    for buf in ir.buffers:
        given = ir.buffer_scopes.get(buf.name, {})
        missing = [d for d in buf.knob_dims if d not in given]
        extra = [d for d in given if d not in buf.knob_dims]
        bad = [f"{d}={v!r}" for d, v in given.items() if v not in _SCOPE_VALUES]
        if missing or extra or bad:
            parts = [f"{', '.join(bad)} not one of {list(_SCOPE_VALUES)}"] if bad else []
            if missing:
                parts.append(f"missing {missing}")
            if extra:
                parts.append(f"{extra} not carried by the buffer")
            failures.append(
                Failure(
                    "scope_keys",
                    buf.name,
                    f"buffer_scopes[{buf.name}] must have exactly {list(buf.knob_dims)}: "
                    + "; ".join(parts),
                )
            )
    return failures


def narrow_depths(lo: int, hi: int, scope: Scope, block: int, tile: int) -> tuple[int, int]:
    """The [lo, hi] allocation depths after adding one dim's scope (its loops at
    ``block`` < ``tile``): PER_TILE needs the allocation inside ``{d}.tile``;
    PER_BLOCK inside ``{d}.block`` but outside ``{d}.tile``; FULL outside
    ``{d}.block``. On plain depths: the samplers and ``derive`` call it millions of
    times while a pool is drawn."""
    if scope == Scope.PER_TILE:
        return max(lo, tile + 1), hi
    if scope == Scope.PER_BLOCK:
        return max(lo, block + 1), min(hi, tile)
    return lo, min(hi, block)


def narrow(
    lo: Bound, hi: Bound, dim: str, scope: Scope, block: int, tile: int
) -> tuple[Bound, Bound]:
    """``narrow_depths``, naming the (dim, scope) that imposes each bound it moves."""
    lo_depth, hi_depth = narrow_depths(lo.depth, hi.depth, scope, block, tile)
    return (
        lo if lo_depth == lo.depth else Bound(lo_depth, dim, scope),
        hi if hi_depth == hi.depth else Bound(hi_depth, dim, scope),
    )


def emission_depths(ir: KernelIR, buf: PhysicalBuffer, position: dict[str, int]) -> tuple[int, int]:
    """``emission_interval``'s depths: the tightest [lower, upper] the buffer's scopes allow."""
    lo, hi = 0, len(position)
    for d in buf.scoped_dims:
        scope = scope_of(ir, buf, d)
        lo, hi = narrow_depths(lo, hi, scope, position[f"{d}.block"], position[f"{d}.tile"])
    return lo, hi


def emission_interval(
    ir: KernelIR, buf: PhysicalBuffer, position: dict[str, int]
) -> tuple[Bound, Bound]:
    """The tightest [lower, upper] depth range the buffer's scopes allow."""
    lo, hi = Bound(0, None, None), Bound(len(position), None, None)
    for d in buf.scoped_dims:
        scope = scope_of(ir, buf, d)
        lo, hi = narrow(lo, hi, d, scope, position[f"{d}.block"], position[f"{d}.tile"])
    return lo, hi


def _interval_failure(ir: KernelIR, buf: PhysicalBuffer, lo: Bound, hi: Bound) -> Failure:
    order = ir.loop_order
    need_in = f"inside {order[lo.depth - 1]} (depth {lo.depth}) for {lo.dim}={lo.scope.value}"
    need_out = f"at most depth {hi.depth} for {hi.dim}={hi.scope.value}"
    lifetime = hi.dim in buf.lifetime_dims or hi.dim in buf.pinned_full
    check = "accumulator_lifetime" if lifetime else "emission_depth"
    why = (
        f" (it must stay live across the whole {hi.dim} reduction)"
        if lifetime and hi.scope == Scope.FULL
        else ""
    )
    return Failure(check, buf.name, f"{buf.name} must be allocated {need_in} but {need_out}{why}")


def _dtype_failures(ir: KernelIR) -> list[Failure]:
    failures: list[Failure] = []
    for op in ir.operators:
        if op.kind == "matmul":
            a, b = (ir.buffer[s].dtype for s in op.srcs)
            if a != b or a not in MATMUL_DTYPES:
                failures.append(
                    Failure(
                        "isa_dtype",
                        op.name,
                        f"nc_matmul needs stationary and moving of one dtype among "
                        f"{list(MATMUL_DTYPES)}, got {a} and {b}",
                    )
                )
        if op.kind in ("load_transpose", "sbuf_transpose"):
            dtype = ir.buffer[op.dst].dtype
            if dtype not in TWO_BYTE:
                failures.append(
                    Failure(
                        "isa_dtype",
                        op.name,
                        f"dma_transpose moves 2-byte elements only ({list(TWO_BYTE)}), "
                        f"{op.srcs[0]} is {dtype}",
                    )
                )
    return failures


def derive(ir: KernelIR) -> tuple[Placement | None, list[Failure]]:
    """Every derived depth, or the failures that prevent deriving them."""
    failures = _dtype_failures(ir)
    position, order_failures = loop_positions(ir)
    failures += order_failures
    failures += knob_key_failures(ir)
    if failures:
        return None, failures
    assert position is not None
    emission: dict[str, int] = {}
    for buf in ir.buffers:
        bad_reduce = [d for d in buf.lifetime_dims if scope_of(ir, buf, d) == Scope.PER_TILE]
        if bad_reduce:
            failures.append(
                Failure(
                    "psum_reducing_scope",
                    buf.name,
                    f"{buf.name}[{bad_reduce[0]}] is PER_TILE: re-allocating the accumulator "
                    f"every {bad_reduce[0]} tile would drop the partial sums; use FULL "
                    "(drain by copy) or PER_BLOCK (drain by add into SBUF)",
                )
            )
            continue
        lo, hi = emission_depths(ir, buf, position)
        if lo > hi:
            failures.append(_interval_failure(ir, buf, *emission_interval(ir, buf, position)))
            continue
        emission[buf.name] = lo
    if failures:
        return None, failures
    fire: dict[str, int] = {}
    after: dict[str, bool] = {}
    deepest: dict[str, int] = {}  # buffer -> deepest depth of the work that completes it
    for op in ir.operators:
        depth = max(
            [emission[b] for b in (*writes(op), *op.srcs) if b in emission]
            + [position[f"{d}.tile"] + 1 for d in _entered(ir, op, position, fire, after)]
        )
        upstream = [deepest[s] for s in op.srcs if s in deepest]
        fire[op.name] = depth
        after[op.name] = any(u > depth for u in upstream)
        deepest[op.dst] = max([depth, *upstream])
    for op in ir.operators:
        for src in op.srcs:
            producer = ir.producers.get(src)
            if producer is None or not after[producer.name]:
                continue
            if fire[op.name] > fire[producer.name]:
                loop = ir.loop_order[fire[producer.name]]
                failures.append(
                    Failure(
                        "operand_scope",
                        op.dst,
                        f"{op.name} fires at depth {fire[op.name]}, inside {loop}, but its "
                        f"operand {src} is complete only after {loop} closes "
                        f"({producer.name} at depth {fire[producer.name]})",
                    )
                )
    failures += _fused_reduce_failures(ir, position, emission, fire)
    failures += _repeated_sum_failures(ir, emission, fire)
    failures += _accumulated_dtype_failures(ir)
    if failures:
        return None, failures
    return Placement(position, emission, fire, after, len(position)), []


def _entered(
    ir: KernelIR,
    op: Operator,
    position: dict[str, int],
    fire: dict[str, int],
    after: dict[str, bool],
) -> list[str]:
    """The dims of ``op.required_tiles`` whose tile loops it fires inside.

    An operand complete only once a loop has closed (its producer fires after that
    loop) keeps the op outside it; a tile loop the op asks for that lies inside it
    is not entered, and the op covers that dim's tiles with loops of its own (a
    second matmul after the first one's reduction, issuing its moving chunks itself).
    """
    limit = min(
        (fire[p.name] for s in op.srcs if (p := ir.producers.get(s)) is not None and after[p.name]),
        default=len(position),
    )
    return [d for d in op.required_tiles if position[f"{d}.tile"] + 1 <= limit]


def writes(op: Operator) -> tuple[str, ...]:
    """The buffers one instruction writes: its destination, and the column an
    activation's fused row sum goes to (``reduce_res``)."""
    res = op.attr("reduce_res")
    return (op.dst,) if res is None else (op.dst, res)


def _adds_into(ir: KernelIR, op: Operator) -> set[str] | None:
    """The dims an instruction that adds into its destination may repeat over: those
    the destination holds and those it sums over (None: the op overwrites)."""
    buf = ir.buffer.get(op.dst)
    if buf is None:
        return None
    if op.kind == "matmul":
        return {*buf.axes, *buf.lifetime_dims}
    if op.kind == "drain" and drain_may_add(ir, op):
        return {*buf.axes, op.attr("reduce")}  # a drain folding each block's sum into SBUF
    return None


def drain_may_add(ir: KernelIR, drain: Operator) -> bool:
    """Whether a PSUM drain's scopes let it fold block sums into SBUF: PSUM holds one K
    block of a dim of several tiles. Validity rules ask this, not ``drain_adds``, so
    that they do not depend on ``ltiles_per_block``."""
    psum = ir.buffer[drain.srcs[0]]
    return any(
        scope_of(ir, psum, d) == Scope.PER_BLOCK and ir.dim[d].num_tiles > 1
        for d in psum.lifetime_dims
    )


def drain_adds(ir: KernelIR, drain: Operator) -> bool:
    """Whether a PSUM drain folds a block's partial sum into SBUF (``tensor_tensor`` add).

    A reduced dim of one block has one partial sum, the whole: it is copied out, with no
    zeroed accumulator to add it to."""
    psum = ir.buffer[drain.srcs[0]]
    return any(
        scope_of(ir, psum, d) == Scope.PER_BLOCK and ir.trip(f"{d}.block") > 1
        for d in psum.lifetime_dims
    )


def _accumulated_dtype_failures(ir: KernelIR) -> list[Failure]:
    """A dma_transpose moves 2-byte elements only, but a matmul result whose drain folds
    each K block's partial sums into SBUF is held in fp32 (``layout.buffer_dtype``):
    such a result can be transposed by DMA only when PSUM holds the whole sum."""
    failures: list[Failure] = []
    for op in ir.operators:
        if op.kind != "sbuf_transpose":
            continue
        drain = ir.producers.get(op.srcs[0])
        if drain is None or drain.kind != "drain" or not drain_may_add(ir, drain):
            continue
        failures.append(
            Failure(
                "accumulated_dtype",
                drain.srcs[0],
                f"{op.name} moves 2-byte elements only, but {op.srcs[0]} accumulates "
                f"{drain.srcs[0]}'s K-block sums in fp32: hold the whole sum in "
                f"{drain.srcs[0]} (FULL over its reduced dim)",
            )
        )
    return failures


def _repeated_sum_failures(
    ir: KernelIR, emission: dict[str, int], fire: dict[str, int]
) -> list[Failure]:
    """A matmul (or a drain adding block sums into SBUF) must not fire again, into the
    same allocation, for each tile of a dim its destination neither holds nor sums
    over: every trip of such a loop would add the same sums again. A dim of one tile
    loops once whatever the block sizes; any other counts, so that, as for every other
    rule, validity does not depend on ``ltiles_per_block`` (the search changes block
    sizes without checking again)."""
    failures: list[Failure] = []
    for op in ir.operators:
        own = _adds_into(ir, op)
        if own is None:
            continue
        for depth in range(emission[op.dst], fire[op.name]):
            entry = ir.loop_order[depth]
            d, trip = entry.split(".")[0], ir.trip(entry)
            if d in own or ir.dim[d].num_tiles == 1:
                continue
            failures.append(
                Failure(
                    "repeated_sum",
                    op.dst,
                    f"{op.name} adds into {op.dst} inside {entry} ({trip} trips), but "
                    f"{op.dst} is allocated outside it (depth {emission[op.dst]}) and holds "
                    f"no {d}: each trip would add the same sums again; allocate {op.dst} "
                    f"inside {entry} or move {entry} outside it",
                )
            )
            break
    return failures


def _fused_reduce_failures(
    ir: KernelIR, position: dict[str, int], emission: dict[str, int], fire: dict[str, int]
) -> list[Failure]:
    """An activation that also sums its row must cover the row in one instruction:
    no loop over the summed dim may be open where it fires."""
    failures: list[Failure] = []
    for op in ir.operators:
        d = op.attr("reduce_dim")
        if d is None or position[f"{d}.block"] >= fire[op.name]:
            continue
        deepest = max((*writes(op), *op.srcs), key=lambda b: emission[b])
        loop = ir.loop_order[position[f"{d}.block"]]
        failures.append(
            Failure(
                "fused_reduce",
                deepest,
                f"{op.name} sums its row into {op.attr('reduce_res')} in the same instruction "
                f"but fires at depth {fire[op.name]}, inside {loop}, so one instruction covers "
                f"part of the row ({deepest} is allocated at depth {emission[deepest]})",
            )
        )
    return failures
