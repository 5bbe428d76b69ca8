"""``validity_report``: every broken rule of a knob state, each with a fix to apply.

A fix is a knob patch (``{"buffer_scopes": {buf: {dim: scope}}}``,
``{"loop_order": [...]}`` or ``{"ltiles_per_block": {dim: n}}``) found by
trying the nearest knob changes against the same derivation that reported
the failure, so applying it is known to clear that failure.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kernelopt.ir.derive import Failure, derive, loop_positions
from kernelopt.ir.model import SCOPES, KernelIR, Scope

Patch = dict[str, Any]
DTYPE_HINT = "no knob changes a dtype: cast the input in INPUT_SPECS or drop the rewrite"


@dataclass(frozen=True)
class ValidityFailure:
    """One failed check: ``buffer`` names the buffer (or operator, or knob) at fault."""

    check: str
    buffer: str
    detail: str
    fix_hint: str
    fix: Patch | None = None


def apply_fix(ir: KernelIR, patch: Patch) -> KernelIR:
    """The IR with a knob patch merged in (scopes merge per buffer and dim)."""
    scopes = {b: dict(s) for b, s in ir.buffer_scopes.items()}
    for buf, dims in patch.get("buffer_scopes", {}).items():
        scopes[buf] = {d: Scope(s) for d, s in dims.items()}
    blocks = {**ir.ltiles_per_block, **patch.get("ltiles_per_block", {})}
    return ir.with_knobs(patch.get("loop_order", ir.loop_order), blocks, scopes)


def _repaired_order(ir: KernelIR) -> list[str]:
    expected = [f"{d.name}.{k}" for d in ir.dims for k in ("block", "tile")]
    order: list[str] = []
    for e in ir.loop_order:
        if e in expected and e not in order:
            order.append(e)
    order += [e for e in expected if e not in order]
    for d in ir.dims:
        b, t = order.index(f"{d.name}.block"), order.index(f"{d.name}.tile")
        if t < b:
            order[b], order[t] = order[t], order[b]
    return order


def _scope_patches(ir: KernelIR, buf_name: str) -> Iterator[Patch]:
    """Scope dicts for one buffer: one-dim changes first, then every combination."""
    buf = ir.buffer.get(buf_name)
    if buf is None:
        return
    current = {d: ir.buffer_scopes.get(buf_name, {}).get(d) for d in buf.knob_dims}
    allowed = {d: buf.scopes_for(d) for d in buf.knob_dims}
    valid = {d: v for d, v in current.items() if v in set(SCOPES)}
    for d in buf.knob_dims:
        for s in allowed[d]:
            if s != current[d] and all(k in valid for k in buf.knob_dims if k != d):
                yield {"buffer_scopes": {buf_name: _plain({**valid, d: s})}}
    for combo in itertools.product(*(allowed[d] for d in buf.knob_dims)):
        yield {"buffer_scopes": {buf_name: _plain(dict(zip(buf.knob_dims, combo, strict=True)))}}


def _plain(scopes: dict[str, Scope]) -> dict[str, str]:
    """Scope values as plain strings, so a patch is JSON like knobs.json itself."""
    return {d: Scope(s).value for d, s in scopes.items()}


def _order_patches(ir: KernelIR) -> Iterator[Patch]:
    """Loop orders one adjacent swap away (keeping each block before its tile)."""
    order = list(ir.loop_order)
    for i in range(len(order) - 1):
        swapped = order[:i] + [order[i + 1], order[i]] + order[i + 2 :]
        yield {"loop_order": swapped}


def _candidates(ir: KernelIR, failure: Failure) -> Iterator[Patch]:
    if failure.check == "loop_order":
        yield {"loop_order": _repaired_order(ir)}
    elif failure.check == "ltiles_per_block":
        dim = ir.dim[failure.buffer]
        given = ir.ltiles_per_block.get(dim.name)
        target = given if isinstance(given, int) else 1
        best = min(dim.divisors(), key=lambda n: (abs(n - target), n))
        yield {"ltiles_per_block": {dim.name: best}}
    elif failure.check in (
        "scope_keys",
        "psum_reducing_scope",
        "emission_depth",
        "accumulator_lifetime",
        "operand_scope",
        "fused_reduce",
        "repeated_sum",
        "accumulated_dtype",
    ):
        yield from _scope_patches(ir, failure.buffer)
        if loop_positions(ir)[0] is not None:
            yield from _order_patches(ir)


def _clears(ir: KernelIR, patch: Patch, failure: Failure) -> tuple[bool, bool]:
    """(this failure is gone, nothing at all fails) after applying ``patch``."""
    try:
        fixed = apply_fix(ir, patch)
    except ValueError:
        return False, False
    remaining = derive(fixed)[1]
    gone = not any(f.check == failure.check and f.buffer == failure.buffer for f in remaining)
    return gone, gone and not remaining


def find_fix(ir: KernelIR, failure: Failure) -> Patch | None:
    """The nearest knob patch that clears ``failure``, preferring one that clears all."""
    first: Patch | None = None
    for patch in _candidates(ir, failure):
        gone, clean = _clears(ir, patch, failure)
        if clean:
            return patch
        if gone and first is None:
            first = patch
    return first


def describe_patch(patch: Patch) -> str:
    parts = []
    for buf, dims in patch.get("buffer_scopes", {}).items():
        scopes = ", ".join(f"{d}: {Scope(s).value}" for d, s in dims.items())
        parts.append(f"set buffer_scopes[{buf!r}] = {{{scopes}}}")
    for dim, n in patch.get("ltiles_per_block", {}).items():
        parts.append(f"set ltiles_per_block[{dim!r}] = {n}")
    if "loop_order" in patch:
        parts.append(f"set loop_order = {list(patch['loop_order'])}")
    return "; ".join(parts)


def validity_report(ir: KernelIR) -> list[ValidityFailure]:
    """Every failed check of the knob state (empty when the IR is valid)."""
    report: list[ValidityFailure] = []
    for failure in derive(ir)[1]:
        fix = None if failure.check == "isa_dtype" else find_fix(ir, failure)
        if fix is not None:
            hint = describe_patch(fix)
        elif failure.check == "isa_dtype":
            hint = DTYPE_HINT
        else:
            hint = "no single knob change clears this; draw a fresh state with sample()"
        report.append(ValidityFailure(failure.check, failure.buffer, failure.detail, hint, fix))
    return report


def repaired(ir: KernelIR, rounds: int = 4) -> KernelIR | None:
    """``ir`` with the fix of its first broken rule applied, ``rounds`` times at most,
    until it is valid; None when a rule has no fix or the rounds end on an invalid state.
    Only the first failure's fix is searched (``validity_report`` searches one per
    failure, and each search derives the state once per patch it tries)."""
    for _ in range(rounds):
        failures = derive(ir)[1]
        if not failures:
            return ir
        first = failures[0]
        fix = None if first.check == "isa_dtype" else find_fix(ir, first)
        if fix is None:
            return None
        ir = apply_fix(ir, fix)
    return None if derive(ir)[1] else ir


def is_valid(ir: KernelIR) -> bool:
    return not derive(ir)[1]
