"""Knob candidates for an NKI kernel, drawn from its KernelIR.

The first batch is every rewrite variant at its default knobs. After that the
proposer sweeps one knob at a time around the best state (5-10 settings), stays
on a knob while it keeps winning, moves to the next knob when it stops, and
draws joint samples once a whole round of sweeps found nothing, then goes
back to sweeping. Every candidate is valid, rendered, and new by signature.
States whose buffers would not fit SBUF/PSUM even in the estimate are left for
last (they are proposed only once everything else is exhausted).
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from kernelopt.ir.derive import derive
from kernelopt.ir.footprint import fits
from kernelopt.ir.knobs_io import (
    KnobsError,
    ir_for_workload,
    ir_from_knobs,
    knobs_text,
    knobs_to_json,
)
from kernelopt.ir.model import SCOPES, KernelIR, Scope
from kernelopt.ir.render import render_ir
from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations
from kernelopt.ir.sample import draw_loop_order, knob_signature, sample
from kernelopt.ir.validate import apply_fix, validity_report
from kernelopt.proposers.base import KNOB, Candidate, Observation, ProposerState
from kernelopt.workload import Workload

SWEEP_WIDTH = 8
JOINT_BATCH = 8
STALE_DRAWS = 200  # fruitless random draws before falling back to full enumeration


def _repair(ir: KernelIR, rounds: int = 4) -> KernelIR | None:
    """Apply fix patches until the state is valid (None if it does not converge)."""
    for _ in range(rounds):
        report = validity_report(ir)
        if not report:
            return ir
        if report[0].fix is None:
            return None
        ir = apply_fix(ir, report[0].fix)
    return None if derive(ir)[1] else ir


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
    return f"vs {against}: " + "; ".join(changes)


class NkiKnobProposer:
    """The Proposer for ``target.kind: nki`` programs (knob candidates only)."""

    def __init__(
        self,
        workload: Workload | str | Path | KernelIR,
        knobs_path: str = "ir/matmul/knobs.json",
        kernel_path: str = "ir/matmul/kernel.py",
        seed: int = 0,
    ) -> None:
        self.base = workload if isinstance(workload, KernelIR) else ir_for_workload(workload)
        self.variants = dict(enumerate_rewrite_combinations(self.base, list(REWRITES.values())))
        self.knobs_path, self.kernel_path = knobs_path, kernel_path
        self.rng = random.Random(seed)
        self.queue: deque[KernelIR] = deque()
        self.proposed: set[str] = set()
        self.started = False
        self.knob_index = 0
        self.fruitless_sweeps = 0
        self.last_improved = False
        self.exhaustive: Iterator[KernelIR] | None = None

    # --- the two verbs ------------------------------------------------------------------

    def observe(self, results: list[Observation]) -> None:
        # Sticky until the next refill reads it: results may arrive one at a time.
        self.last_improved = self.last_improved or any(r.verdict == "keep" for r in results)

    def propose(self, state: ProposerState) -> list[Candidate] | None:
        tried = set(state.tried) | self.proposed
        best = self._best(state)
        want = max(1, state.batch_size)
        if not self.started:
            # Batch 0: a floor per rewrite variant before any feedback exists.
            self.started = True
            first = [ir for ir in self.variants.values() if knob_signature(ir) not in tried]
            if first:
                for ir in first:
                    self.proposed.add(knob_signature(ir))
                return [self._candidate(None, ir, knob_signature(ir)) for ir in first]
        if self.last_improved:
            self.queue.clear()  # settings queued around the old best are stale now
        batch: list[Candidate] = []
        stale = 0
        while len(batch) < want:
            if not self.queue and not self._refill(best, tried):
                stale += 1
                if stale > 3:
                    break
                continue
            ir = self.queue.popleft()
            sig = knob_signature(ir)
            if sig in tried:
                continue
            tried.add(sig)
            self.proposed.add(sig)
            batch.append(self._candidate(best, ir, sig))
        return batch or None

    # --- where candidates come from ------------------------------------------------------

    def _best(self, state: ProposerState) -> KernelIR | None:
        if not state.best_knobs:
            return None
        try:
            ir = ir_from_knobs(self.base, state.best_knobs)
        except KnobsError:
            return None
        return ir if not derive(ir)[1] else None

    def _knobs_of(self, ir: KernelIR) -> list[str]:
        names = ["loop_order"]
        names += [f"ltiles_per_block.{d.name}" for d in ir.dims if len(d.divisors()) > 1]
        names += [f"buffer_scopes.{b.name}" for b in ir.buffers]
        return names

    def _refill(self, best: KernelIR | None, tried: set[str]) -> bool:
        """Queue the next sweep or joint draw; False when nothing new could be found."""
        if self.exhaustive is not None:
            return self._from_exhaustive(tried)
        if best is not None:
            knobs = self._knobs_of(best)
            if self.last_improved:
                self.fruitless_sweeps = 0  # the knob just won: sweep it again around the new best
            else:
                self.knob_index += 1
                self.fruitless_sweeps += 1
            self.last_improved = False
            while self.fruitless_sweeps <= len(knobs):
                knob = knobs[self.knob_index % len(knobs)]
                fresh = [
                    ir
                    for ir in self._sweep(best, knob)
                    if knob_signature(ir) not in tried and fits(ir)
                ]
                if fresh:
                    self.queue.extend(fresh[:SWEEP_WIDTH])
                    return True
                self.knob_index += 1
                self.fruitless_sweeps += 1
            # A whole round of sweeps found nothing: knobs interact, so draw jointly.
            self.fruitless_sweeps = 0
        drawn = self._joint(tried)
        if drawn:
            self.queue.extend(drawn)
            return True
        self.exhaustive = self._enumerate()
        return self._from_exhaustive(tried)

    def _sweep(self, best: KernelIR, knob: str) -> Iterator[KernelIR]:
        """Settings of one knob nearest the best first, others held (repaired if needed)."""
        if knob == "loop_order":
            order = list(best.loop_order)
            for i in range(len(order) - 1):
                swapped = order[:i] + [order[i + 1], order[i]] + order[i + 2 :]
                fixed = _repair(best.with_knobs(loop_order=swapped))
                if fixed is not None:
                    yield fixed
            for _ in range(SWEEP_WIDTH):
                fixed = _repair(best.with_knobs(loop_order=draw_loop_order(best, self.rng)))
                if fixed is not None:
                    yield fixed
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

    def _joint(self, tried: set[str]) -> list[KernelIR]:
        drawn: list[KernelIR] = []
        variants = list(self.variants.values())
        misses = 0
        for _ in range(STALE_DRAWS * 20):
            if len(drawn) == JOINT_BATCH or misses == STALE_DRAWS:
                break
            ir = sample(self.rng.choice(variants), self.rng)
            if not fits(ir):
                continue  # likely out of memory on the device: try states that fit first
            sig = knob_signature(ir)
            if sig in tried or any(knob_signature(d) == sig for d in drawn):
                misses += 1
                continue
            drawn.append(ir)
        return drawn

    def _enumerate(self) -> Iterator[KernelIR]:
        """Every valid state of every variant (only reached when draws stop finding new ones)."""
        for variant in self.variants.values():
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

    def _from_exhaustive(self, tried: set[str]) -> bool:
        assert self.exhaustive is not None
        for ir in self.exhaustive:
            if knob_signature(ir) not in tried:
                self.queue.append(ir)
                return True
        return False

    def _candidate(self, best: KernelIR | None, ir: KernelIR, sig: str) -> Candidate:
        if best is None:
            hypothesis = describe_change(self.variants[ir.variant], ir, against="default")
        else:
            hypothesis = describe_change(best, ir)
        return Candidate(
            kind=KNOB,
            hypothesis=hypothesis,
            files={self.knobs_path: knobs_text(ir), self.kernel_path: render_ir(ir)},
            knobs=knobs_to_json(ir),
            signature=sig,
        )
