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

import dataclasses
import hashlib
import random
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.ir.derive import derive
from kernelopt.ir.effective import effective_key
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
from kernelopt.ir.start import SimTimer, Timer
from kernelopt.proposers.base import KNOB, Candidate, Observation, ProposerState
from kernelopt.proposers.ceiling import Ceiling
from kernelopt.proposers.evidence import FLAT_TIES, Evidence, exact_tie
from kernelopt.proposers.first import START_POOL, ScreenEvents, first_batch
from kernelopt.proposers.joint import JointMoves
from kernelopt.proposers.moves import (
    SWEEP_WIDTH,
    describe_change,
    enumerate_states,
    knobs_of,
    source_key,
)
from kernelopt.proposers.ranking import binding_engine, ranked_sweeps
from kernelopt.proposers.surrogate import features, fit
from kernelopt.workload import Workload, load_workload

if TYPE_CHECKING:
    from kernelopt.sampling import Reporter

JOINT_BATCH = 8
# Fruitless single-knob sweeps before moving several knobs at once: a graph with
# many buffers (a norm feeding a matmul has ~25 knobs) would otherwise spend the
# whole budget sweeping knobs one at a time.
FRUITLESS_ROUND = 8
ELITES = 4  # best distinct states perturbed, besides each variant's best
RESTARTS = 2  # best fresh joint draws perturbed too: a way out of the best state's basin
MODEL_MIN = 24  # measured states before the surrogate model ranks perturbations
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


class NkiKnobProposer(JointMoves):
    """The Proposer for ``target.kind: nki`` programs (knob candidates only)."""

    def __init__(
        self,
        workload: Workload | str | Path | KernelIR,
        knobs_path: str = "ir/matmul/knobs.json",
        kernel_path: str = "ir/matmul/kernel.py",
        seed: int = 0,
        baseline_kernel: str | None = None,
        baseline_knobs: dict[str, Any] | None = None,
        start_pool: int = START_POOL,
        timer: Timer | None = None,
        reporter: Reporter | None = None,
    ) -> None:
        if isinstance(workload, str | Path):
            workload = load_workload(workload)
        self.base = workload if isinstance(workload, KernelIR) else ir_for_workload(workload)
        # The first batch is screened on the simulator when the workload is known (or a
        # timer is given); 0 measures each rewrite variant at its default knobs instead.
        self.start_pool = start_pool
        self.reporter = reporter  # hears how far the first batch's screen is
        self.timer = timer
        if timer is None and start_pool > 0 and isinstance(workload, Workload):
            self.timer = SimTimer(workload)
        self.variants = dict(enumerate_rewrite_combinations(self.base, list(REWRITES.values())))
        self.variant_irs = list(self.variants.values())
        self.knobs_path, self.kernel_path = knobs_path, kernel_path
        self.rng = random.Random(seed)
        self.queue: deque[KernelIR] = deque()
        self.proposed: set[str] = set()
        self.fresh: set[str] = set()  # signatures of fresh joint draws, for restarts
        self.features: dict[str, dict[str, float]] = {}  # by knob signature
        self.sources: set[str] = set()  # rendered kernels already proposed (or tried)
        self.effective: set[str] = set()  # ... and their instruction streams (effective_key)
        self.kernel_keys: dict[str, tuple[str, str]] = {}  # signature -> both keys
        self.ceiling = Ceiling()  # states that cannot beat BEST's measured time wait
        if baseline_kernel is not None:  # what the baseline measured: never a candidate
            self.sources.add(hashlib.sha1(baseline_kernel.encode()).hexdigest())
        # The baseline's knob state, when the knob file renders exactly the baseline kernel
        # (a hand-edited kernel has no knob state): the search starts from it.
        self.baseline_ir = self._ir(baseline_knobs) if baseline_knobs else None
        if self.baseline_ir is not None and render_ir(self.baseline_ir) != baseline_kernel:
            self.baseline_ir = None
        if self.baseline_ir is not None:
            self._note(self.baseline_ir)
        self.known: set[str] = set()  # history signatures whose kernels are in ``sources``
        self.started = False
        self.swept = False  # a single-knob sweep has been queued
        self.center: str | None = None  # the BEST the sweeps move around
        self.swept_here: set[str] = set()  # knobs swept around it
        self.settings: dict[str, list[tuple[float, KernelIR]]] = {}  # each knob's, around it
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
        self.ceiling.follow(self._profile_of(best, state) if best is not None else {})
        self.evidence.refit(self._measured(state), state.better)
        want = max(1, state.batch_size)
        if not self.started:
            self.started = True
            first = self._first(tried)
            if first:
                return first
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
            if self.exhaustive is None and self._keys(ir)[1] in self.effective:
                continue  # an equivalent kernel was taken since it was queued (left for last)
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

    def _first(self, tried: set[str]) -> list[Candidate]:
        """Batch 0, before any feedback: the best screened states, or (without a timer)
        a floor per rewrite variant at its default knobs."""
        if self.timer is not None:
            extra = [self.baseline_ir] if self.baseline_ir is not None else []
            events = ScreenEvents(self.reporter) if self.reporter is not None else None
            picks = first_batch(
                self.variant_irs,
                self.timer,
                self.rng,
                self.start_pool,
                self._new(tried),
                extra,
                events,
            )
            kept = [p for p in picks if not self.ceiling.screened_slower(p.seconds)]
            for pick in kept:
                self.proposed.add(knob_signature(pick.ir))
                self._note(pick.ir)
            if picks:  # all screened slower than BEST on sim: the sweeps start at once
                return [self._candidate(None, p.ir, p.hypothesis) for p in kept]
        first = [
            ir
            for ir in self.variants.values()
            if knob_signature(ir) not in tried and source_key(ir) not in self.sources
        ]
        for ir in first:
            self.proposed.add(knob_signature(ir))
            self._note(ir)
        return [self._candidate(None, ir) for ir in first]

    def _take(self, best: KernelIR | None, ir: KernelIR, tried: set[str]) -> Candidate:
        sig = knob_signature(ir)
        tried.add(sig)
        self.proposed.add(sig)
        self._note(ir)
        self.deferred.pop(sig, None)
        return self._candidate(best, ir)

    def _candidate(
        self, best: KernelIR | None, ir: KernelIR, hypothesis: str | None = None
    ) -> Candidate:
        against = best or self.variants[ir.variant]
        made = candidate_of(ir, against, best is None, self.knobs_path, self.kernel_path)
        return dataclasses.replace(made, hypothesis=hypothesis) if hypothesis else made

    # --- what the run has taught ---------------------------------------------------------

    def _learn_sources(self, history: tuple[Observation, ...]) -> None:
        """Kernels tried before this proposer existed (a resumed run) count as proposed."""
        for obs in history:
            if obs.knobs is None or obs.signature in self.known:
                continue
            self.known.add(obs.signature or "")
            ir = self._ir(obs.knobs)
            if ir is not None:
                self._note(ir)

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
        won = self.sweeping if self.last_improved else None  # the knob that just won
        self.sweeping = None
        if self.exhaustive is not None:
            return self._from_exhaustive(tried)
        if best is not None:
            dma_bound = bool(_dma_bound(self._profile_of(best, state)))
            knobs = knobs_of(best, dma_bound)
            engine = binding_engine(self._profile_of(best, state))
            center = f"{knob_signature(best)}:{engine}"
            if self.last_improved or center != self.center:
                # A new BEST: every knob is worth a sweep around it again.
                self.center, self.swept_here, self.fruitless_sweeps = center, set(), 0
                self.settings = {}
            elif self.swept:  # the last sweep found nothing
                self.fruitless_sweeps += 1
            self.last_improved = False
            if self.fruitless_sweeps <= min(len(knobs), FRUITLESS_ROUND):
                todo = [k for k in knobs if k not in self.swept_here]
                worth = lambda ir: self._worth(ir, tried)  # noqa: E731
                ranked = ranked_sweeps(best, todo, self.rng, worth, self.settings, engine)
                # A knob that just won is swept again around the new BEST first.
                ranked.sort(key=lambda kf: kf[0] != won)
                for knob, fresh in ranked:
                    self.swept_here.add(knob)
                    if fresh:
                        self.queue.extend(fresh[:SWEEP_WIDTH])
                        self.sweeping, self.flat, self.swept = knob, 0, True
                        return True
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
        """New, likely to fit, and not a kernel already proposed under other knobs (the same
        text, or the same instructions in the same loops: it could only tie)."""
        if knob_signature(ir) in tried or not fits(ir):
            return False
        source, effective = self._keys(ir)
        if source in self.sources or effective in self.effective:
            return False
        return self.ceiling.admits(ir)

    def _keys(self, ir: KernelIR) -> tuple[str, str]:
        """The kernel's source and effective keys, each state's computed once."""
        sig = knob_signature(ir)
        if sig not in self.kernel_keys:
            self.kernel_keys[sig] = (source_key(ir), effective_key(ir) or "")
        return self.kernel_keys[sig]

    def _new(self, tried: set[str]) -> Callable[[KernelIR], bool]:
        """Whether a state is untried and its kernel new (the first batch need not fit the
        estimate: the simulator has just timed it)."""
        return lambda ir: (
            knob_signature(ir) not in tried
            and not (self._keys(ir)[0] in self.sources or self._keys(ir)[1] in self.effective)
        )

    def _note(self, ir: KernelIR) -> None:
        """``ir``'s kernel is proposed (or measured): neither it nor an equivalent again."""
        source, effective = self._keys(ir)
        self.sources.add(source)
        self.effective.add(effective)

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
