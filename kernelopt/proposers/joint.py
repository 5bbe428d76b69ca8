"""The NKI proposer's joint moves: several knobs at once, and fresh joint draws.

Used once single-knob sweeps stop winning (knobs interact, so coordinate descent
is stuck): the elites with two or three knobs nudged, fresh draws against tunnel
vision, and, once a surrogate model is fitted, the batch it ranks best. A mixin
of ``NkiKnobProposer``, whose state (generator, variants, what was tried) it reads.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np

from kernelopt.ir.model import KernelIR
from kernelopt.ir.sample import knob_signature
from kernelopt.ir.validate import repaired
from kernelopt.proposers.moves import joint_draws, knobs_of, nudge, source_key
from kernelopt.proposers.surrogate import load_traffic

PERTURB_BATCH = 8
FRESH_PER_PERTURB = 2  # fresh joint draws in a perturbation batch, against tunnel vision
PERTURB_TRIES = 400  # perturbations attempted per batch before giving up on the elites
PERTURB_POOL = 48  # perturbations drawn per batch, from which a DMA-bound kernel picks
GUIDED_DRAWS = 8  # fresh joint draws per pick when the traffic estimate leads
MODEL_POOL = 128  # fresh joint draws the model ranks alongside the perturbations
NEAR_SHARE = 1  # perturbations in a model-led batch; the rest are ranked fresh draws
EXPLORE = 2  # unranked fresh draws per model-led batch, so the model keeps learning


class JointMoves:
    """Joint perturbations and draws; ``NkiKnobProposer`` supplies the state."""

    rng: random.Random
    variant_irs: list[KernelIR]
    fresh: set[str]

    def _worth(self, ir: KernelIR, tried: set[str]) -> bool:
        raise NotImplementedError

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
            fixed = repaired(ir)
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
        far = [ir for ir in far if self._worth(ir, tried)]  # no kernel measured already
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
            drawn = joint_draws(self.variant_irs, tried, want, self.rng)
            picks = [ir for ir in drawn if self._worth(ir, tried)]  # no kernel measured already
        while dma_bound and len(picks) < want:
            draws = joint_draws(
                self.variant_irs,
                tried | {knob_signature(p) for p in picks},
                GUIDED_DRAWS,
                self.rng,
            )
            draws = [ir for ir in draws if self._worth(ir, tried)]
            if not draws:
                break
            picks.append(min(draws, key=load_traffic))
        self.fresh.update(knob_signature(p) for p in picks)
        return picks
