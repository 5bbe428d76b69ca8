"""Joint knob draws that derivation accepts, default knobs, and knob signatures.

The draw is conditioned step by step with the same ``narrow`` rule derivation
uses: a loop order, block sizes among the divisors, then each buffer's scopes
dim by dim, offering only scopes that keep its emission interval non-empty
(an interval that contains any depth always admits one more scope, so the
draw never dead-ends). Cross-buffer rules are then checked by ``derive``
itself; a draw it rejects is redrawn.
"""

from __future__ import annotations

import random

from kernelopt.ir.derive import Bound, derive, narrow
from kernelopt.ir.footprint import fits
from kernelopt.ir.model import SCOPES, KernelIR, Scope
from kernelopt.proposers.base import signature_of

MAX_DRAWS = 500


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


def draw_scopes(
    ir: KernelIR, position: dict[str, int], rng: random.Random
) -> dict[str, dict[str, Scope]]:
    """Per buffer, scopes drawn dim by dim from those that keep the interval non-empty."""
    depth = len(position)
    scopes: dict[str, dict[str, Scope]] = {}
    for buf in ir.buffers:
        lo, hi = Bound(0, None, None), Bound(depth, None, None)
        for d in buf.pinned_full:
            lo, hi = narrow(lo, hi, d, Scope.FULL, position[f"{d}.block"], position[f"{d}.tile"])
        chosen: dict[str, Scope] = {}
        # Reducing dims first: they cannot fall back to PER_TILE.
        for d in (*buf.lifetime_dims, *buf.axes):
            if d in buf.pinned_full:
                continue
            block, tile = position[f"{d}.block"], position[f"{d}.tile"]
            options = []
            for scope in SCOPES:
                if scope == Scope.PER_TILE and d in buf.lifetime_dims:
                    continue
                nlo, nhi = narrow(lo, hi, d, scope, block, tile)
                if nlo.depth <= nhi.depth:
                    options.append((scope, nlo, nhi))
            if not options:
                break
            scope, lo, hi = rng.choice(options)
            chosen[d] = scope
        scopes[buf.name] = chosen
    return scopes


def sample(ir: KernelIR, rng: random.Random) -> KernelIR:
    """A joint draw of all three knobs that passes ``validity_report``."""
    for _ in range(MAX_DRAWS):
        order = draw_loop_order(ir, rng)
        position = {e: i for i, e in enumerate(order)}
        blocks = {d.name: rng.choice(d.divisors()) for d in ir.dims}
        scopes = draw_scopes(ir, position, rng)
        candidate = ir.with_knobs(order, blocks, scopes)
        if not derive(candidate)[1]:
            return candidate
    raise SampleError(f"no valid knob state found in {MAX_DRAWS} draws for {ir.func_name}")


def sample_fitting(ir: KernelIR, rng: random.Random) -> KernelIR:
    """A joint draw that is valid and fits on chip by the all-live estimate (``fits``,
    which never underestimates), so the kernel it renders runs without a capacity error.
    A draw that would not fit is redrawn."""
    for _ in range(MAX_DRAWS):
        candidate = sample(ir, rng)
        if fits(candidate):
            return candidate
    raise SampleError(
        f"no valid knob state of {ir.func_name} ({ir.variant}) fits on chip in {MAX_DRAWS} draws"
    )


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
    return sample(candidate, random.Random(0))


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
