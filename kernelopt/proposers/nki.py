"""Knob candidates for an NKI kernel, drawn from its KernelIR.

The first batch is every rewrite variant at its default knobs. After that the
proposer alternates three modes, as a tuner reading profiles would:

- targeted sweep: one knob at a time around the best state (5-10 settings),
  staying on a knob while it keeps winning; the knobs the best state's
  profile implicates go first (a DMA-bound kernel sweeps block sizes and load
  buffer scopes before loop order);
- joint perturbation, once a whole round of sweeps found nothing (the knobs
  interact, so coordinate descent is stuck): the best state and the other
  elites (the runner-up states, each variant's best, and the best fresh joint
  draws, which restart the search in other basins) with two or three knobs
  changed at once, plus fresh joint draws. Once enough states are measured, a
  surrogate (ridge regression on derived features and their products, refitted
  to a bootstrap resample every batch) picks the batch from a large pool of
  both; before that a DMA-bound best prefers perturbations that load less;
- back to sweeping as soon as a perturbation or draw wins.

Whatever the mode, a state the run's own measurements predict far worse
than BEST (`evidence.py`: sure of it, not merely guessing) is set aside while
better-predicted states remain, and a sweep whose settings measure exactly
BEST's figure twice is a plateau: the rest of it is skipped.

Every candidate is valid, rendered, and new by signature. States whose
buffers would not fit SBUF/PSUM even in the estimate, and states that render
to a kernel already proposed, are left for last (proposed only once
everything else is exhausted).
"""

from __future__ import annotations

import hashlib
import random
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.ir.derive import derive
from kernelopt.ir.footprint import fits
from kernelopt.ir.knobs_io import (
    KnobsError,
    ir_for_workload,
    ir_from_knobs,
    knobs_text,
    knobs_to_json,
)
from kernelopt.ir.model import KernelIR
from kernelopt.ir.render import render_ir
from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations
from kernelopt.ir.sample import knob_signature
from kernelopt.proposers.base import KNOB, Candidate, Observation, ProposerState
from kernelopt.proposers.evidence import FLAT_TIES, Evidence, exact_tie
from kernelopt.proposers.moves import (
    SWEEP_WIDTH,
    describe_change,
    enumerate_states,
    joint_draws,
    knobs_of,
    nudge,
    repair,
    source_key,
    sweep,
)
from kernelopt.proposers.surrogate import features, fit, load_traffic
from kernelopt.workload import Workload

JOINT_BATCH = 8
# Fruitless single-knob sweeps before moving several knobs at once: a graph with
# many buffers (a norm feeding a matmul has ~25 knobs) would otherwise spend the
# whole budget sweeping knobs one at a time.
FRUITLESS_ROUND = 8
PERTURB_BATCH = 8
FRESH_PER_PERTURB = 2  # fresh joint draws in a perturbation batch, against tunnel vision
ELITES = 4  # best distinct states perturbed, besides each variant's best
RESTARTS = 2  # best fresh joint draws perturbed too: a way out of the best state's basin
PERTURB_TRIES = 400  # perturbations attempted per batch before giving up on the elites
PERTURB_POOL = 48  # perturbations drawn per batch, from which a DMA-bound kernel picks
GUIDED_DRAWS = 8  # fresh joint draws per pick when the traffic estimate leads
MODEL_MIN = 24  # measured states before the surrogate model ranks perturbations
MODEL_POOL = 128  # fresh joint draws the model ranks alongside the perturbations
NEAR_SHARE = 1  # perturbations in a model-led batch; the rest are ranked fresh draws
EXPLORE = 2  # unranked fresh draws per model-led batch, so the model keeps learning
UNUSABLE = frozenset({"failed", "incorrect", "diverged"})
MAX_DEFERRED = 64  # states predicted far worse set aside per batch before taking the least bad


_COMPUTE_ENGINES = (
    "tensor_engine_active_time_percent",
    "vector_engine_active_time_percent",
    "scalar_engine_active_time_percent",
)


def _dma_bound(profile: dict[str, Any]) -> bool | None:
    """Whether DMA, not a compute engine, limits the kernel (None when the profile cannot say).

    A norm or a softmax has no TensorE work: DMA is compared with the busiest
    of TensorE, VectorE and ScalarE, not with TensorE alone.
    """
    dma = profile.get("dma_active_time_percent")
    te = profile.get("tensor_engine_active_time_percent")
    if not isinstance(dma, int | float) or not isinstance(te, int | float):
        return None
    busy = [profile.get(k) for k in _COMPUTE_ENGINES]
    return dma > max(b for b in busy if isinstance(b, int | float))


class NkiKnobProposer:
    """The Proposer for ``target.kind: nki`` programs (knob candidates only)."""

    def __init__(
        self,
        workload: Workload | str | Path | KernelIR,
        knobs_path: str = "ir/matmul/knobs.json",
        kernel_path: str = "ir/matmul/kernel.py",
        seed: int = 0,
        baseline_kernel: str | None = None,
        baseline_knobs: dict[str, Any] | None = None,
    ) -> None:
        self.base = workload if isinstance(workload, KernelIR) else ir_for_workload(workload)
        self.variants = dict(enumerate_rewrite_combinations(self.base, list(REWRITES.values())))
        self.variant_irs = list(self.variants.values())
        self.knobs_path, self.kernel_path = knobs_path, kernel_path
        self.rng = random.Random(seed)
        self.queue: deque[KernelIR] = deque()
        self.proposed: set[str] = set()
        self.fresh: set[str] = set()  # signatures of fresh joint draws, for restarts
        self.features: dict[str, dict[str, float]] = {}  # by knob signature
        self.sources: set[str] = set()  # rendered kernels already proposed (or tried)
        if baseline_kernel is not None:  # what the baseline measured: never a candidate
            self.sources.add(hashlib.sha1(baseline_kernel.encode()).hexdigest())
        # The baseline's knob state, when the knob file renders exactly the baseline kernel
        # (a hand-edited kernel has no knob state): the search starts from it.
        self.baseline_ir = self._ir(baseline_knobs) if baseline_knobs else None
        if self.baseline_ir is not None and render_ir(self.baseline_ir) != baseline_kernel:
            self.baseline_ir = None
        self.known: set[str] = set()  # history signatures whose kernels are in ``sources``
        self.started = False
        self.knob_index = 0
        self.fruitless_sweeps = 0
        self.last_improved = False
        self.exhaustive: Iterator[KernelIR] | None = None
        self.evidence = Evidence(self._featured)
        self.deferred: dict[str, KernelIR] = {}  # predicted far worse than BEST: later, if ever
        self.sweeping: str | None = None  # the knob the queue sweeps, if it is a sweep
        self.flat = 0  # exact ties of BEST in the current sweep
        self.best_metric: float | None = None

    # --- the two verbs ------------------------------------------------------------------

    def observe(self, results: list[Observation]) -> None:
        # Sticky until the next refill reads it: results may arrive one at a time.
        self.last_improved = self.last_improved or any(r.verdict == "keep" for r in results)
        for r in results:
            if self.sweeping and r.verdict == "tie" and exact_tie(r.metric, self.best_metric):
                self.flat += 1
                if self.flat >= FLAT_TIES:
                    self.queue.clear()  # the knob does not move this kernel: cross the plateau

    def propose(self, state: ProposerState) -> list[Candidate] | None:
        tried = set(state.tried) | self.proposed
        self._learn_sources(state.history)
        best = self._best(state)
        self.best_metric = state.best_metric
        self.evidence.refit(self._measured(state), state.better)
        want = max(1, state.batch_size)
        if not self.started:
            # Batch 0: a floor per rewrite variant before any feedback exists.
            self.started = True
            first = [
                ir
                for ir in self.variants.values()
                if knob_signature(ir) not in tried and source_key(ir) not in self.sources
            ]
            if first:
                for ir in first:
                    self.proposed.add(knob_signature(ir))
                    self.sources.add(source_key(ir))
                return [self._candidate(None, ir) for ir in first]
        if self.last_improved:
            self.queue.clear()  # settings queued around the old best are stale now
        batch: list[Candidate] = []
        stale = deferred = 0
        while len(batch) < want and deferred < MAX_DEFERRED:
            if not self.queue and not self._refill(best, tried, state):
                stale += 1
                if stale > 3:
                    break
                continue
            ir = self.queue.popleft()
            sig = knob_signature(ir)
            if sig in tried or sig in self.deferred:
                continue
            if self.evidence.far_worse(ir, state.best_metric):
                self.deferred[sig] = ir
                deferred += 1
                continue
            batch.append(self._take(best, ir, tried))
        while len(batch) < want:
            waiting = [ir for sig, ir in self.deferred.items() if sig not in tried]
            if not waiting:
                break  # the set-aside state predicted best now (the model has learnt since)
            batch.append(self._take(best, self.evidence.best_of(waiting, state.best_metric), tried))
        return batch or None

    def _take(self, best: KernelIR | None, ir: KernelIR, tried: set[str]) -> Candidate:
        sig = knob_signature(ir)
        tried.add(sig)
        self.proposed.add(sig)
        self.sources.add(source_key(ir))
        self.deferred.pop(sig, None)
        return self._candidate(best, ir)

    def _candidate(self, best: KernelIR | None, ir: KernelIR) -> Candidate:
        against = best or self.variants[ir.variant]
        return candidate_of(ir, against, best is None, self.knobs_path, self.kernel_path)

    # --- what the run has taught ---------------------------------------------------------

    def _learn_sources(self, history: tuple[Observation, ...]) -> None:
        """Kernels tried before this proposer existed (a resumed run) count as proposed."""
        for obs in history:
            if obs.knobs is None or obs.signature in self.known:
                continue
            self.known.add(obs.signature or "")
            ir = self._ir(obs.knobs)
            if ir is not None:
                self.sources.add(source_key(ir))

    def _ir(self, knobs: dict[str, Any]) -> KernelIR | None:
        try:
            ir = ir_from_knobs(self.base, knobs)
        except KnobsError:
            return None
        return ir if not derive(ir)[1] else None

    def _best(self, state: ProposerState) -> KernelIR | None:
        if state.best_knobs:
            return self._ir(state.best_knobs)
        best = state.best
        return self.baseline_ir if best is not None and best.verdict == "baseline" else None

    def _ranked(self, state: ProposerState) -> list[Observation]:
        """Measured knob states, best first, one per signature."""
        usable = [
            o
            for o in state.history
            if o.knobs is not None and o.metric is not None and o.verdict not in UNUSABLE
        ]
        usable.sort(key=lambda o: o.metric if state.better == "lower" else -o.metric)
        seen: set[str] = set()
        ranked = []
        for o in usable:
            key = o.signature or repr(sorted(o.knobs.items()))
            if key not in seen:
                seen.add(key)
                ranked.append(o)
        return ranked

    def _elites(self, best: KernelIR | None, state: ProposerState) -> list[KernelIR]:
        """The best state, the runners-up, and each rewrite variant's best, best first."""
        ranked = self._ranked(state)
        picks = ranked[:ELITES] + [o for o in ranked if o.signature in self.fresh][:RESTARTS]
        for variant in self.variants:
            top = next((o for o in ranked if o.knobs.get("variant") == variant), None)
            if top is not None and top not in picks:
                picks.append(top)
        elites = [best] if best is not None else []
        for o in picks:
            ir = self._ir(o.knobs)
            if ir is not None and all(knob_signature(ir) != knob_signature(e) for e in elites):
                elites.append(ir)
        return elites

    def _measured(self, state: ProposerState) -> list[tuple[KernelIR, float]]:
        """Every measured knob state the model can learn from, with its metric."""
        pairs = [(self._ir(o.knobs), float(o.metric)) for o in self._ranked(state)]
        base = state.baseline
        if self.baseline_ir is not None and base is not None and base.metric is not None:
            pairs.append((self.baseline_ir, float(base.metric)))
        return [(ir, metric) for ir, metric in pairs if ir is not None]

    def _featured(self, ir: KernelIR) -> dict[str, float]:
        sig = knob_signature(ir)
        if sig not in self.features:
            self.features[sig] = features(ir)
        return self.features[sig]

    def _model(self, state: ProposerState) -> Callable[[list[KernelIR]], np.ndarray] | None:
        """A surrogate of the metric fitted to every measured state (None while too few)."""
        seen, metrics = [], []
        sign = -1.0 if state.better == "lower" else 1.0
        for obs in self._ranked(state):
            ir = self._ir(obs.knobs)
            if ir is not None:
                seen.append(self._featured(ir))
                metrics.append(sign * float(obs.metric))
        if len(seen) < MODEL_MIN:
            return None
        # Fitted to a bootstrap resample (Thompson sampling): batches rank by different
        # plausible models, so picks spread where the data leave the model unsure.
        picks = [self.rng.randrange(len(seen)) for _ in seen]
        predict = fit([seen[i] for i in picks], [metrics[i] for i in picks])
        return lambda irs: predict([self._featured(ir) for ir in irs])

    def _profile_of(self, best: KernelIR | None, state: ProposerState) -> dict[str, Any]:
        if best is None:
            return {}
        sig = knob_signature(best)
        for obs in reversed(state.history):
            if obs.signature == sig or obs.knobs == state.best_knobs:
                return obs.profile
        return {}

    # --- where candidates come from ------------------------------------------------------

    def _refill(self, best: KernelIR | None, tried: set[str], state: ProposerState) -> bool:
        """Queue the next sweep or joint batch; False when nothing new could be found."""
        self.sweeping = None
        if self.exhaustive is not None:
            return self._from_exhaustive(tried)
        if best is not None:
            dma_bound = bool(_dma_bound(self._profile_of(best, state)))
            knobs = knobs_of(best, dma_bound)
            if self.last_improved:
                self.fruitless_sweeps = 0  # the knob just won: sweep it again around the new best
            else:
                self.knob_index += 1
                self.fruitless_sweeps += 1
            self.last_improved = False
            while self.fruitless_sweeps <= min(len(knobs), FRUITLESS_ROUND):
                knob = knobs[self.knob_index % len(knobs)]
                fresh = [ir for ir in sweep(best, knob, self.rng) if self._worth(ir, tried)]
                if fresh:
                    self.queue.extend(fresh[:SWEEP_WIDTH])
                    self.sweeping, self.flat = knob, 0
                    return True
                self.knob_index += 1
                self.fruitless_sweeps += 1
            # A whole round of sweeps found nothing: knobs interact, so move several at once.
            self.fruitless_sweeps = 0
            elites = self._elites(best, state)
            model = self._model(state)
            if model is not None:
                drawn = self._ranked_batch(elites, tried, model)
            else:
                drawn = self._perturbations(elites, tried, dma_bound)
            if drawn:
                self.queue.extend(drawn)
                return True
        drawn = self._guided(tried, JOINT_BATCH, dma_bound=False)
        if drawn:
            self.queue.extend(drawn)
            return True
        self.exhaustive = enumerate_states(self.variant_irs)
        return self._from_exhaustive(tried)

    def _worth(self, ir: KernelIR, tried: set[str]) -> bool:
        """New, likely to fit, and not a kernel already proposed under other knobs."""
        return knob_signature(ir) not in tried and fits(ir) and source_key(ir) not in self.sources

    def _perturbed(self, elites: list[KernelIR], tried: set[str]) -> list[KernelIR]:
        """Elites with two or three knobs moved at once; the best state most often."""
        pool: dict[str, KernelIR] = {}
        sources: set[str] = set()
        for _ in range(PERTURB_TRIES):
            if len(pool) >= PERTURB_POOL or not elites:
                break
            # Half the draws move the best state, the rest spread over the other elites.
            center = elites[0] if self.rng.random() < 0.5 else self.rng.choice(elites)
            moves = knobs_of(center)
            ir = center
            for knob in self.rng.sample(moves, min(len(moves), self.rng.choice((2, 2, 3)))):
                ir = nudge(ir, knob, self.rng)
            fixed = repair(ir)
            if fixed is None or knob_signature(fixed) in pool or not self._worth(fixed, tried):
                continue
            source = source_key(fixed)
            if source not in sources:
                sources.add(source)
                pool[knob_signature(fixed)] = fixed
        drawn = list(pool.values())
        self.rng.shuffle(drawn)
        return drawn

    def _perturbations(
        self, elites: list[KernelIR], tried: set[str], dma_bound: bool
    ) -> list[KernelIR]:
        """A perturbation batch before the model has data, plus fresh draws.

        When the best kernel is DMA-bound, half the batch is the perturbations
        that load the least from HBM; the rest stays random so the estimate
        cannot steer the search away from everything else.
        """
        drawn = self._perturbed(elites, tried)
        want = PERTURB_BATCH - FRESH_PER_PERTURB
        if dma_bound:
            lean = sorted(drawn, key=load_traffic)[: want // 2]
            drawn = lean + [ir for ir in drawn if all(ir is not x for x in lean)]
        drawn = drawn[:want]
        keys = tried | {knob_signature(ir) for ir in drawn}
        drawn += self._guided(keys, PERTURB_BATCH - len(drawn), dma_bound)
        return drawn

    def _ranked_batch(
        self,
        elites: list[KernelIR],
        tried: set[str],
        model: Callable[[list[KernelIR]], np.ndarray],
    ) -> list[KernelIR]:
        """The surrogate's favourite perturbations and fresh draws, plus one unranked draw.

        Perturbations and fresh draws are ranked apart: the model rates the best
        state's neighbours highest, and on a plateau those are ties, so the
        fresh draws it likes best (restarts in other basins) get their own share.
        """
        near = self._perturbed(elites, tried)
        far = joint_draws(
            self.variant_irs,
            tried | {knob_signature(ir) for ir in near},
            MODEL_POOL,
            self.rng,
        )
        picked: list[KernelIR] = []
        for pool, share in ((near, NEAR_SHARE), (far, PERTURB_BATCH - NEAR_SHARE - EXPLORE)):
            if pool:
                scores = model(pool)
                order = sorted(range(len(pool)), key=lambda i: -scores[i])
                picked += [pool[i] for i in order[:share]]
        picked += [ir for ir in far if all(ir is not p for p in picked)][:EXPLORE]
        self.fresh.update(knob_signature(ir) for ir in picked if any(ir is f for f in far))
        return picked

    def _guided(self, tried: set[str], want: int, dma_bound: bool) -> list[KernelIR]:
        """Fresh joint draws; for a DMA-bound kernel, the leanest of several per pick."""
        picks: list[KernelIR] = []
        if not dma_bound:
            picks = joint_draws(self.variant_irs, tried, want, self.rng)
        while dma_bound and len(picks) < want:
            draws = joint_draws(
                self.variant_irs,
                tried | {knob_signature(p) for p in picks},
                GUIDED_DRAWS,
                self.rng,
            )
            if not draws:
                break
            picks.append(min(draws, key=load_traffic))
        self.fresh.update(knob_signature(p) for p in picks)
        return picks

    def _from_exhaustive(self, tried: set[str]) -> bool:
        assert self.exhaustive is not None
        ir = next((ir for ir in self.exhaustive if knob_signature(ir) not in tried), None)
        if ir is not None:
            self.queue.append(ir)
        return ir is not None


def candidate_of(
    ir: KernelIR, against: KernelIR, from_default: bool, knobs_path: str, kernel_path: str
) -> Candidate:
    """``ir`` as a knob candidate: its knob file and rendered kernel, and what changed."""
    how = "default" if from_default else "best"
    return Candidate(
        kind=KNOB,
        hypothesis=describe_change(against, ir, against=how),
        files={knobs_path: knobs_text(ir), kernel_path: render_ir(ir)},
        knobs=knobs_to_json(ir),
        signature=knob_signature(ir),
    )
