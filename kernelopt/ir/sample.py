"""Joint knob draws that derivation accepts, default knobs, and knob signatures.

The draw is conditioned step by step with the same ``narrow`` rule derivation
uses: a loop order, block sizes among the divisors, then each buffer's scopes
dim by dim, offering only scopes that keep its emission interval non-empty
(an interval that contains any depth always admits one more scope, so the
draw never dead-ends). Cross-buffer rules are then checked by ``derive``
itself; a draw it rejects is redrawn.

Where valid joint draws are rare (a chain of row reductions feeding scales
and transposes admits few loop orders: every consumer of a row's statistic
must sit outside the loop that completes it), ``MAX_DRAWS`` may all be
rejected. Loop orders are then drawn among those that honour the graph's
loop dependencies (``loop_dependencies``), and if those fail too, rejected
draws are climbed towards validity: single-knob moves (a block size, one
buffer's scope on one dim, one loop moved elsewhere in the order), each kept
when it leaves no more failed checks than before.
"""

from __future__ import annotations

import random
from collections import Counter

from kernelopt.ir.derive import derive, narrow_depths
from kernelopt.ir.footprint import capacity_problem, shrink_to_fit
from kernelopt.ir.model import KernelIR, Scope
from kernelopt.proposers.base import signature_of

MAX_DRAWS = 500
CLIMBS = 36  # fresh draws climbed towards validity once the draws were all rejected
CLIMB_STEPS = 200  # single-knob moves tried per climb


class SampleError(RuntimeError):
    """No valid knob state was found (the IR admits none, or it is very rare)."""


def draw_loop_order(ir: KernelIR, rng: random.Random) -> tuple[str, ...]:
    """A uniform draw among orders that put every ``{d}.block`` before ``{d}.tile``."""
    entries = [f"{d.name}.{k}" for d in ir.dims for k in ("block", "tile")]
    rng.shuffle(entries)
    for d in ir.dims:
        b, t = entries.index(f"{d.name}.block"), entries.index(f"{d.name}.tile")
        if t < b:
            entries[b], entries[t] = entries[t], entries[b]
    return tuple(entries)


def loop_dependencies(ir: KernelIR) -> set[tuple[str, str]]:
    """Pairs (a, r): a consumer that needs dim ``a``'s tile loop reads a buffer that
    is complete only once a loop over dim ``r`` has closed (a reduction upstream of
    it over a dim the buffer no longer holds), so ``a``'s loops should enclose ``r``'s.

    A graph where a row statistic or a matmul's result feeds work over other dims
    (two chained matmuls) admits few loop orders, and the uniform draw almost never
    meets them; these pairs say which.
    """
    loops: dict[str, set[str]] = {}  # buffer -> dims looped over by the work producing it
    edges: set[tuple[str, str]] = set()
    for op in ir.operators:
        own: set[str] = set(op.required_tiles)
        for name in (op.dst, *op.srcs):
            buf = ir.buffer.get(name)
            if buf is not None:
                own |= {d for d in buf.axes + buf.lifetime_dims if d not in buf.pinned_full}
        upstream = set().union(*(loops.get(s, set()) for s in op.srcs))
        for src in op.srcs:
            buf = ir.buffer.get(src)
            if buf is None:
                continue
            done_after = loops.get(src, set()) - set(buf.axes)
            edges |= {(a, r) for a in op.required_tiles for r in done_after if a != r}
        loops[op.dst] = own | upstream
    return edges


def draw_ordered_loops(ir: KernelIR, rng: random.Random) -> tuple[str, ...]:
    """A loop order drawn among those that honour ``loop_dependencies`` (each pair
    on a cycle may be dropped at random): a random topological order of the entries."""
    edges = list(loop_dependencies(ir))
    rng.shuffle(edges)
    after: dict[str, set[str]] = {}  # entry -> entries that must come before it
    for d in ir.dims:
        after[f"{d.name}.block"] = set()
        after[f"{d.name}.tile"] = {f"{d.name}.block"}
    for a, r in edges:
        before = f"{a}.tile"
        if not _reaches(after, before, f"{r}.block"):  # keeps the constraints acyclic
            after[f"{r}.block"].add(before)
    order: list[str] = []
    while after:
        ready = sorted(e for e, needs in after.items() if not needs)
        pick = rng.choice(ready)
        order.append(pick)
        del after[pick]
        for needs in after.values():
            needs.discard(pick)
    return tuple(order)


def _reaches(after: dict[str, set[str]], start: str, target: str) -> bool:
    """Whether ``target`` must already come before ``start`` (a path in ``after``)."""
    seen, todo = set(), [start]
    while todo:
        e = todo.pop()
        if e == target:
            return True
        if e not in seen:
            seen.add(e)
            todo += after[e]
    return False


def draw_scopes(
    ir: KernelIR, position: dict[str, int], rng: random.Random
) -> dict[str, dict[str, Scope]]:
    """Per buffer, scopes drawn dim by dim from those that keep the interval non-empty."""
    depth = len(position)
    scopes: dict[str, dict[str, Scope]] = {}
    for buf in ir.buffers:
        lo, hi = 0, depth
        for d in buf.pinned_full:
            lo, hi = narrow_depths(
                lo, hi, Scope.FULL, position[f"{d}.block"], position[f"{d}.tile"]
            )
        chosen: dict[str, Scope] = {}
        # Reducing dims first: they cannot fall back to PER_TILE.
        for d in (*buf.lifetime_dims, *buf.axes):
            if d in buf.pinned_full:
                continue
            block, tile = position[f"{d}.block"], position[f"{d}.tile"]
            options = []
            for scope in buf.scopes_for(d):
                nlo, nhi = narrow_depths(lo, hi, scope, block, tile)
                if nlo <= nhi:
                    options.append((scope, nlo, nhi))
            if not options:
                break
            scope, lo, hi = rng.choice(options)
            chosen[d] = scope
        scopes[buf.name] = chosen
    return scopes


def draw(ir: KernelIR, rng: random.Random, ordered: bool = False) -> KernelIR:
    """One joint draw of the three knobs, valid or not: a loop order (uniform, or with
    ``ordered`` one that honours the graph's loop dependencies), block sizes, then
    each buffer's scopes conditioned on that order."""
    order = draw_ordered_loops(ir, rng) if ordered else draw_loop_order(ir, rng)
    position = {e: i for i, e in enumerate(order)}
    blocks = {d.name: rng.choice(d.divisors()) for d in ir.dims}
    return ir.with_knobs(order, blocks, draw_scopes(ir, position, rng))


def sample(ir: KernelIR, rng: random.Random) -> KernelIR:
    """A joint draw of all three knobs that passes ``validity_report``."""
    structure = _structure(ir)
    known = _UNSAMPLEABLE.get(structure)
    if known is not None:  # searched in full already, in this process
        raise SampleError(known)
    if structure not in _ORDERED_FIRST:
        for _ in range(MAX_DRAWS):
            candidate = draw(ir, rng)
            if not derive(candidate)[1]:
                return _remember(candidate)
        _ORDERED_FIRST.add(structure)
    seen: Counter[tuple[str, str]] = Counter()  # (check, buffer) of the failed rules
    example: dict[tuple[str, str], str] = {}
    for _ in range(MAX_DRAWS):
        candidate = draw(ir, rng, ordered=True)
        failures = derive(candidate)[1]
        if not failures:
            return _remember(candidate)
        seen.update({(f.check, f.buffer) for f in failures})
        example.update({(f.check, f.buffer): f.detail for f in failures})
    for _ in range(CLIMBS):
        found = climb(draw(ir, rng), rng)
        if found is not None:
            return _remember(found)
    anchors = _ANCHORS.get(structure, [])
    if anchors:
        anchor = rng.choice(anchors)
        start = ir.with_knobs(anchor.loop_order, anchor.ltiles_per_block, anchor.buffer_scopes)
        if not derive(start)[1]:
            return walk(start, rng, CLIMB_STEPS)
    message = (
        f"no valid knob state found for {ir.func_name} ({ir.variant}) in {MAX_DRAWS} uniform "
        f"and {MAX_DRAWS} dependency-ordered draws and {CLIMBS} climbs"
    )
    if seen:
        (check, buffer), count = seen.most_common(1)[0]
        message += (
            f"; the rule broken most often ({count} of {MAX_DRAWS} dependency-ordered draws): "
            f"{check}({buffer}): {example[check, buffer]}"
        )
    if not anchors:
        _UNSAMPLEABLE[structure] = message
    raise SampleError(message)


# Valid states already found per IR structure (this process), so a draw that finds
# none of its own can walk from one of them instead of failing.
_ANCHORS: dict[tuple[object, ...], list[KernelIR]] = {}
_MAX_ANCHORS = 32
# Structures whose full search (draws, ordered draws, climbs) found no valid state
# in this process, with the error it raised: a failing graph is not searched again
# for each of its callers (the build's default knobs, then every screening draw).
_UNSAMPLEABLE: dict[tuple[object, ...], str] = {}
# Structures whose MAX_DRAWS uniform draws all failed once: later samples of them
# start with the dependency-ordered draws.
_ORDERED_FIRST: set[tuple[object, ...]] = set()


def _structure(ir: KernelIR) -> tuple[object, ...]:
    return (
        ir.func_name,
        ir.variant,
        tuple((d.name, d.size) for d in ir.dims),
        tuple((op.kind, op.dst, op.srcs) for op in ir.operators),
    )


def _remember(ir: KernelIR) -> KernelIR:
    anchors = _ANCHORS.setdefault(_structure(ir), [])
    if len(anchors) < _MAX_ANCHORS:
        anchors.append(ir)
    return ir


def walk(ir: KernelIR, rng: random.Random, steps: int) -> KernelIR:
    """A random walk of single-knob moves from a valid state, each kept only when the
    state stays valid (so the result is valid)."""
    for _ in range(steps):
        moved = _move(ir, rng, [])
        if moved is not None and not derive(moved)[1]:
            ir = moved
    return ir


def climb(ir: KernelIR, rng: random.Random) -> KernelIR | None:
    """Single-knob moves from a rejected draw, each kept when it leaves no more failed
    checks than before (sideways moves cross plateaus), until no check fails."""
    failing, focus = _distance(ir)
    for _ in range(CLIMB_STEPS):
        if not failing:
            return ir
        moved = _move(ir, rng, focus)
        if moved is None:
            continue
        distance, near = _distance(moved)
        if distance <= failing:
            ir, failing, focus = moved, distance, near
    return ir if not failing else None


# ``derive`` checks in stages and stops at the first stage that fails, so a state
# failing a later stage is nearer validity than one failing an earlier stage,
# however many checks each fails.
_LATE = frozenset({"operand_scope", "fused_reduce", "repeated_sum"})
_MIDDLE = frozenset({"psum_reducing_scope", "emission_depth", "accumulator_lifetime"})


def _distance(ir: KernelIR) -> tuple[int, list[str]]:
    """0 for a valid state, else how far from valid by the stage and count of its
    failures; and the buffers the failures involve (the failing buffer, and the
    operands of the op that writes it)."""
    failures = derive(ir)[1]
    if not failures:
        return 0, []
    checks = {f.check for f in failures}
    stage = 2 if checks & _LATE else 1 if checks & _MIDDLE else 0
    near: list[str] = []
    for f in failures:
        op = ir.producers.get(f.buffer)
        near += [b for b in (f.buffer, *(op.srcs if op else ())) if b in ir.buffer]
    return (3 - stage) * 1000 + len(failures), near


def _move(ir: KernelIR, rng: random.Random, focus: list[str]) -> KernelIR | None:
    """One knob changed at random: a block size, one buffer dim's scope, or one loop moved."""
    kind = rng.choice(("block", "scope", "order"))
    order = list(ir.loop_order)
    blocks = dict(ir.ltiles_per_block)
    scopes = {b: dict(s) for b, s in ir.buffer_scopes.items()}
    if kind == "block":
        dim = rng.choice(ir.dims)
        blocks[dim.name] = rng.choice(dim.divisors())
    elif kind == "scope":
        # Half the scope moves go to a buffer the failures name.
        near = [ir.buffer[b] for b in focus if rng.random() < 0.5]
        buffers = [b for b in near or ir.buffers if b.knob_dims]
        if not buffers:
            return None
        buf = rng.choice(buffers)
        d = rng.choice(buf.knob_dims)
        scopes.setdefault(buf.name, {})[d] = rng.choice(buf.scopes_for(d))
    else:
        entry = order.pop(rng.randrange(len(order)))
        order.insert(rng.randrange(len(order) + 1), entry)
        if any(order.index(f"{d.name}.tile") < order.index(f"{d.name}.block") for d in ir.dims):
            return None
    return ir.with_knobs(tuple(order), blocks, scopes)


def sample_fitting(ir: KernelIR, rng: random.Random) -> KernelIR:
    """A joint draw that is valid and fits on chip by the all-live estimate (``fits``,
    which never underestimates), so the kernel it renders runs without a capacity error.
    A draw that would not fit is narrowed until it does (``shrink_to_fit``), or redrawn."""
    for _ in range(MAX_DRAWS):
        candidate = shrink_to_fit(sample(ir, rng))
        if candidate is not None:
            return candidate
    why = capacity_problem(ir)
    raise SampleError(
        f"no valid knob state of {ir.func_name} ({ir.variant}) fits on chip in {MAX_DRAWS} draws"
        + (f": {why}" if why else "")
    )


def sample_rotation(
    variants: list[KernelIR], count: int, rng: random.Random
) -> tuple[list[KernelIR], dict[str, str]]:
    """``count`` fitting states drawn over ``variants`` in turn, and the variants left
    out (variant name -> why): one with no state that fits is skipped, not fatal, as
    long as another variant has one; when none has, the first variant's error is raised."""
    states: list[KernelIR] = []
    skipped: dict[str, str] = {}
    live = list(variants)
    first: SampleError | None = None
    i = 0
    while len(states) < count and live:
        ir = live[i % len(live)]
        try:
            states.append(sample_fitting(ir, rng))
            i += 1
        except SampleError as exc:
            first = first or exc
            skipped[ir.variant] = str(exc)
            live.remove(ir)
    if len(states) < count and first is not None:
        raise first
    return states, skipped


def default_knobs(ir: KernelIR) -> KernelIR:
    """One tile per block; parallel loops outside reducing ones; buffers one tile wide.

    Accumulators hold their whole reduction (FULL), the classic PSUM layout.
    """
    parallel = [d.name for d in ir.dims if not d.reducing]
    reducing = [d.name for d in ir.dims if d.reducing]
    order = [f"{d}.block" for d in parallel] + [f"{d}.tile" for d in parallel]
    for d in reducing:
        order += [f"{d}.block", f"{d}.tile"]
    scopes = {
        b.name: {
            **{d: Scope.PER_TILE for d in b.axes if d in b.knob_dims},
            **{d: Scope.FULL for d in b.lifetime_dims if d in b.knob_dims},
        }
        for b in ir.buffers
    }
    return ir.with_knobs(order, {d.name: 1 for d in ir.dims}, scopes)


def with_default_knobs(ir: KernelIR) -> KernelIR:
    """The default knobs when they are valid for this graph, else a seeded draw."""
    candidate = default_knobs(ir)
    failures = derive(candidate)[1]
    # A dtype problem is the workload's, not the knobs': keep the defaults and let
    # validity_report say so.
    if not failures or any(f.check == "isa_dtype" for f in failures):
        return candidate
    try:
        return sample(candidate, random.Random(0))
    except SampleError:
        # The graph admits no state the draws find: keep the defaults, so that the IR
        # still builds and shows, and let validity_report and sample say what breaks.
        return candidate


def knobs_dict(ir: KernelIR) -> dict[str, object]:
    """The knob state as plain JSON values (what ``knobs.json`` holds)."""
    return {
        "variant": ir.variant,
        "loop_order": list(ir.loop_order),
        "ltiles_per_block": {d.name: ir.ltiles_per_block.get(d.name) for d in ir.dims},
        "buffer_scopes": {
            b: {d: Scope(s).value for d, s in scopes.items()}
            for b, scopes in ir.buffer_scopes.items()
        },
    }


def knob_signature(ir: KernelIR) -> str:
    """A stable key for the knob state, rewrite variant included (same across runs)."""
    return signature_of(knobs_dict(ir))
