"""Moves in a KernelIR's knob space: sweeps of one knob, nudges, joint draws, enumeration.

Pure functions of the IR and the caller's random generator (so a seeded
proposer draws the same sequence); every state they yield is valid, or
repaired with the validity report's fix hints.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Iterator
from typing import Any

from kernelopt.ir.derive import derive
from kernelopt.ir.footprint import shrink_to_fit
from kernelopt.ir.model import SCOPES, Dim, KernelIR, PhysicalBuffer, Scope
from kernelopt.ir.render import render_ir
from kernelopt.ir.sample import draw_loop_order, knob_signature, sample
from kernelopt.ir.validate import repaired

SWEEP_WIDTH = 8  # random loop orders tried per loop-order sweep, besides adjacent swaps
NEAR_STEP = 0.75  # share of nudges to a neighbouring block size or scope
STALE_DRAWS = 200  # fruitless random draws before joint sampling gives up


def describe_change(best: KernelIR, cand: KernelIR, against: str = "best") -> str:
    """One line naming every knob that differs from ``best``."""
    if best.variant != cand.variant:
        return (
            f"variant {cand.variant} (best is {best.variant}), joint sample {knob_signature(cand)}"
        )
    changes = []
    if cand.loop_order != best.loop_order:
        changes.append(f"loop_order {' '.join(cand.loop_order)}")
    for d, n in cand.ltiles_per_block.items():
        if best.ltiles_per_block.get(d) != n:
            changes.append(f"ltiles_per_block[{d}] {best.ltiles_per_block.get(d)}->{n}")
    for b, scopes in cand.buffer_scopes.items():
        for d, s in scopes.items():
            old = best.buffer_scopes.get(b, {}).get(d)
            if old != s:
                changes.append(f"{b}[{d}] {Scope(old).value if old else None}->{Scope(s).value}")
    if not changes:
        return f"variant {cand.variant} at the {against} knobs"
    # Changes against BEST need no preamble; against the defaults they say so.
    prefix = "" if against == "best" else f"from the {against} knobs: "
    return prefix + "; ".join(changes)


def is_sweep(hypothesis: str) -> bool:
    """Whether ``describe_change`` said this: knob moves around BEST (not a variant,
    a start from the default knobs or a screened start)."""
    return not hypothesis.startswith(("variant ", "from the ", "screened start "))


def source_key(ir: KernelIR) -> str:
    """Two knob states that render the same kernel measure the same: one key for both."""
    return hashlib.sha1(render_ir(ir).encode()).hexdigest()


def knobs_of(ir: KernelIR, dma_bound: bool = False) -> list[str]:
    """The knobs to sweep, the ones the profile implicates first."""
    loads = [f"buffer_scopes.{b.name}" for b in ir.buffers if b.role == "load"]
    # The biggest buffers first: where a [P, 1] column lives hardly moves the kernel.
    sized = sorted(
        (b for b in ir.buffers if b.role != "load"),
        key=lambda b: -ir.dim[b.axes[0]].size * ir.dim[b.axes[1]].size,
    )
    others = [f"buffer_scopes.{b.name}" for b in sized]
    blocks = [f"ltiles_per_block.{d.name}" for d in ir.dims if len(d.divisors()) > 1]
    # A block of rows handled together (every buffer holding one tile of the dim holds the
    # block): the one move that changes the granularity of the whole kernel at once.
    coarsen = [f"coarsen.{d.name}" for d in ir.dims if len(d.divisors()) > 1]
    if dma_bound:
        # Reload traffic dominates: bigger blocks and wider load buffers cut it, and
        # a block size only matters to the loads held per block (blocking moves both).
        blocking = [f"blocking.{d.name}" for d in ir.dims if len(d.divisors()) > 1]
        return coarsen + blocking + blocks + loads + ["loop_order"] + others
    return ["loop_order"] + coarsen + blocks + loads + others


def sweep(best: KernelIR, knob: str, rng: random.Random) -> Iterator[KernelIR]:
    """Settings of one knob nearest the best first, others held (repaired if needed)."""
    if knob == "loop_order":
        order = list(best.loop_order)
        for i in range(len(order) - 1):
            swapped = order[:i] + [order[i + 1], order[i]] + order[i + 2 :]
            fixed = repaired(best.with_knobs(loop_order=swapped))
            if fixed is not None:
                yield fixed
        for _ in range(SWEEP_WIDTH):
            fixed = repaired(best.with_knobs(loop_order=draw_loop_order(best, rng)))
            if fixed is not None:
                yield fixed
    elif knob.startswith("blocking."):
        yield from _blocking(best, best.dim[knob.split(".", 1)[1]])
    elif knob.startswith("coarsen."):
        yield from _coarsen(best, best.dim[knob.split(".", 1)[1]])
    elif knob.startswith("ltiles_per_block."):
        dim = best.dim[knob.split(".", 1)[1]]
        current = best.ltiles_per_block[dim.name]
        for n in sorted(dim.divisors(), key=lambda n: (abs(n - current), n)):
            if n != current:
                yield best.with_knobs(ltiles_per_block={**best.ltiles_per_block, dim.name: n})
    else:
        name = knob.split(".", 1)[1]
        buf = best.buffer[name]
        current = best.buffer_scopes[name]
        combos = itertools.product(SCOPES, repeat=len(buf.knob_dims))
        options = [dict(zip(buf.knob_dims, c, strict=True)) for c in combos]
        options.sort(key=lambda o: sum(o[d] != current[d] for d in o))
        for option in options:
            if option == current:
                continue
            cand = best.with_knobs(buffer_scopes={**best.buffer_scopes, name: option})
            if not derive(cand)[1]:
                yield cand


def _blocking(best: KernelIR, dim: Dim) -> Iterator[KernelIR]:
    """Bigger blocks of ``dim`` with the loads that hold one tile of it held per block."""

    def blocked(buf: PhysicalBuffer, d: str, scope: Scope) -> Scope:
        per_tile = buf.role == "load" and d == dim.name and scope == Scope.PER_TILE
        return Scope.PER_BLOCK if per_tile else scope

    scopes = {
        b.name: {d: blocked(b, d, s) for d, s in best.buffer_scopes[b.name].items()}
        for b in best.buffers
    }
    if scopes == best.buffer_scopes:
        return  # no load holds a tile of dim: the plain block-size sweep covers it
    for n in sorted(n for n in dim.divisors() if n > best.ltiles_per_block[dim.name]):
        blocks = {**best.ltiles_per_block, dim.name: n}
        fixed = repaired(best.with_knobs(ltiles_per_block=blocks, buffer_scopes=scopes))
        if fixed is not None:
            yield fixed


def _coarsen(best: KernelIR, dim: Dim) -> Iterator[KernelIR]:
    """Every other block size of ``dim``, nearest first, each as ``coarsened`` makes it."""
    current = best.ltiles_per_block[dim.name]
    for n in sorted(dim.divisors(), key=lambda n: (abs(n - current), n)):
        if n != current:
            fixed = repaired(coarsened(best, dim, n))
            if fixed is not None:
                yield fixed


def coarsened(ir: KernelIR, dim: Dim, n: int) -> KernelIR:
    """Blocks of ``n`` tiles of ``dim``, every buffer that holds one tile of it holding the
    block instead (and back to one tile at a block of one): the kernel handles a block of
    ``dim`` where it handled a tile. Possibly invalid: the caller repairs."""
    old, new = (Scope.PER_TILE, Scope.PER_BLOCK) if n > 1 else (Scope.PER_BLOCK, Scope.PER_TILE)
    scopes = {
        b.name: {
            d: new if d == dim.name and s == old and d not in b.lifetime_dims else s
            for d, s in ir.buffer_scopes[b.name].items()
        }
        for b in ir.buffers
    }
    return ir.with_knobs(
        ltiles_per_block={**ir.ltiles_per_block, dim.name: n}, buffer_scopes=scopes
    )


def nudge(ir: KernelIR, knob: str, rng: random.Random) -> KernelIR:
    """One random change of one knob (possibly invalid: the caller repairs)."""
    if knob == "loop_order":
        order = list(ir.loop_order)
        i = rng.randrange(len(order) - 1)
        order[i], order[i + 1] = order[i + 1], order[i]
        return ir.with_knobs(loop_order=order)
    kind, name = knob.split(".", 1)
    if kind == "coarsen":
        dim = ir.dim[name]
        return coarsened(ir, dim, step(dim.divisors(), ir.ltiles_per_block[name], rng))
    if kind == "ltiles_per_block":
        n = step(ir.dim[name].divisors(), ir.ltiles_per_block[name], rng)
        return ir.with_knobs(ltiles_per_block={**ir.ltiles_per_block, name: n})
    if not ir.buffer[name].knob_dims:
        return ir
    scopes = dict(ir.buffer_scopes[name])
    dim = rng.choice(ir.buffer[name].knob_dims)
    scopes[dim] = step(SCOPES, scopes[dim], rng)
    return ir.with_knobs(buffer_scopes={**ir.buffer_scopes, name: scopes})


def step(options: tuple[Any, ...], current: Any, rng: random.Random) -> Any:
    """Usually a neighbouring setting (the landscape is smoother there), sometimes any."""
    i = options.index(current)
    near = [options[j] for j in (i - 1, i + 1) if 0 <= j < len(options)]
    far = [o for o in options if o != current]
    return rng.choice(near if near and rng.random() < NEAR_STEP else far)


def joint_draws(
    variants: list[KernelIR], tried: set[str], want: int, rng: random.Random
) -> list[KernelIR]:
    """Up to ``want`` new valid states drawn jointly over the variants, the likely-to-fit only."""
    drawn: list[KernelIR] = []
    misses = 0
    for _ in range(STALE_DRAWS * 20):
        if len(drawn) >= want or misses == STALE_DRAWS:
            break
        # Out of memory on the device as drawn: the nearest state that fits instead.
        ir = shrink_to_fit(sample(rng.choice(variants), rng))
        if ir is None:
            continue
        sig = knob_signature(ir)
        if sig in tried or any(knob_signature(d) == sig for d in drawn):
            misses += 1
            continue
        drawn.append(ir)
    return drawn


def enumerate_states(variants: list[KernelIR]) -> Iterator[KernelIR]:
    """Every valid state of every variant (only reached when draws stop finding new ones)."""
    for variant in variants:
        entries = [f"{d.name}.{k}" for d in variant.dims for k in ("block", "tile")]
        blocks = [d.divisors() for d in variant.dims]
        for order in itertools.permutations(entries):
            pos = {e: i for i, e in enumerate(order)}
            if any(pos[f"{d.name}.tile"] < pos[f"{d.name}.block"] for d in variant.dims):
                continue
            for sizes in itertools.product(*blocks):
                per_buffer = [
                    [
                        dict(zip(b.knob_dims, c, strict=True))
                        for c in itertools.product(SCOPES, repeat=len(b.knob_dims))
                    ]
                    for b in variant.buffers
                ]
                for scopes in itertools.product(*per_buffer):
                    ir = variant.with_knobs(
                        order,
                        {d.name: n for d, n in zip(variant.dims, sizes, strict=True)},
                        {b.name: s for b, s in zip(variant.buffers, scopes, strict=True)},
                    )
                    if not derive(ir)[1]:
                        yield ir
