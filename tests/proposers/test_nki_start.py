"""Where the NKI proposer starts (the baseline's knob state) and how a DMA-bound
kernel is blocked (a block size together with the loads held per block)."""

from __future__ import annotations

import json
from pathlib import Path

from kernelopt.ir import ir_from_knobs, render_ir
from kernelopt.ir.model import Scope
from kernelopt.proposers.base import Observation, ProposerState
from kernelopt.proposers.moves import is_sweep, knobs_of, sweep
from kernelopt.proposers.nki import NkiKnobProposer

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "ir" / "matmul" / "workload.py"
KNOBS, KERNEL = "ir/matmul/knobs.json", "ir/matmul/kernel.py"
SHIPPED = json.loads((ROOT / KNOBS).read_text())


def _first(proposer: NkiKnobProposer) -> list[str]:
    """The hypotheses of the first candidates after a baseline with no knobs in its note."""
    baseline = Observation(0, "knob", "baseline", 27.6, None, None, {})
    state = ProposerState(
        best_metric=27.6, best_knobs=None, better="higher", history=(baseline,), batch_size=3
    )
    batch = proposer.propose(state) or []
    return [c.hypothesis for c in batch]


def test_the_search_starts_from_the_baseline_knobs_when_they_render_its_kernel() -> None:
    kernel = render_ir(ir_from_knobs(MATMUL, SHIPPED))
    proposer = NkiKnobProposer(
        MATMUL, KNOBS, KERNEL, baseline_kernel=kernel, baseline_knobs=SHIPPED, start_pool=0
    )
    first = _first(proposer)
    assert first and all(is_sweep(h) for h in first)


def test_a_hand_edited_baseline_has_no_knob_state_to_start_from() -> None:
    kernel = render_ir(ir_from_knobs(MATMUL, SHIPPED)) + "\n# tuned by hand\n"
    proposer = NkiKnobProposer(
        MATMUL, KNOBS, KERNEL, baseline_kernel=kernel, baseline_knobs=SHIPPED, start_pool=0
    )
    assert proposer.baseline_ir is None
    first = _first(proposer)
    # The variant floor (the default knobs render another kernel), not a sweep around BEST.
    assert first and not any(is_sweep(h) for h in first)


def test_blocking_a_dimension_holds_its_loads_per_block() -> None:
    best = ir_from_knobs(MATMUL, SHIPPED)
    # DMA-bound: the block-size moves come first, coarsening (every buffer) then blocking
    # (the loads only); neither is on the list of a compute-bound best's first knobs.
    dma = knobs_of(best, dma_bound=True)
    first_blocking = next(i for i, k in enumerate(dma) if k.startswith("blocking."))
    assert all(k.startswith("coarsen.") for k in dma[:first_blocking])
    assert not any(k.startswith("blocking.") for k in knobs_of(best, dma_bound=False))
    moved = list(sweep(best, "blocking.d2", None))  # type: ignore[arg-type]
    assert moved
    for ir in moved:
        assert ir.ltiles_per_block["d2"] > best.ltiles_per_block["d2"]
        for buf in ir.buffers:
            if buf.role == "load" and "d2" in buf.knob_dims:
                assert ir.buffer_scopes[buf.name]["d2"] == Scope.PER_BLOCK
        # Nothing but d2's block and its loads moves.
        assert ir.loop_order == best.loop_order
        assert {k: v for k, v in ir.ltiles_per_block.items() if k != "d2"} == {
            k: v for k, v in best.ltiles_per_block.items() if k != "d2"
        }
