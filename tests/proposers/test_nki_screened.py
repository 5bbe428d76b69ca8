"""The NKI proposer's screened start, its equivalence dedup and its coarsening move,
on small workloads timed by the real simulator."""

from __future__ import annotations

from pathlib import Path

from benchmarks_support.drive import drive

from kernelopt.ir import ir_from_knobs, render_ir
from kernelopt.ir.derive import derive
from kernelopt.ir.effective import effective_key
from kernelopt.ir.model import Scope
from kernelopt.ir.start import SimTimer, pool, ranked
from kernelopt.proposers.base import Observation, ProposerState
from kernelopt.proposers.first import FIRST, MARGIN
from kernelopt.proposers.moves import coarsened, is_sweep
from kernelopt.proposers.nki import NkiKnobProposer
from kernelopt.workload import load_workload

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = """
import numpy as np

from kernelopt.ir import NKIActivation, NKIReciprocal, NKITensorReduce, NKITensorScalar


def f_nkigym(x):
    neg_max = NKITensorReduce(op="maximum", axis=1, negate=True)(data=x)
    e = NKIActivation(op="exp", bias=neg_max)(data=x)
    r = NKIReciprocal()(data=NKITensorReduce(op="add", axis=1)(data=e))
    out = NKITensorScalar(op0="multiply", operand0=r)(data=e)
    return out


def f_numpy(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


INPUT_SPECS = {"x": ((512, 1024), "bfloat16")}
"""


def _workload(tmp_path: Path) -> Path:
    path = tmp_path / "workload.py"
    path.write_text(SOFTMAX)
    return path


def _first(proposer: NkiKnobProposer) -> list:
    state = ProposerState(best_metric=None, best_knobs=None, better="higher", batch_size=1)
    return proposer.propose(state) or []


def test_the_first_batch_is_the_best_of_the_screened_pool(tmp_path: Path) -> None:
    path = _workload(tmp_path)
    proposer = NkiKnobProposer(path, "k.json", "k.py", seed=2, start_pool=8)
    batch = _first(proposer)
    assert 1 <= len(batch) <= FIRST
    assert all(
        c.hypothesis.startswith("screened start ") and not is_sweep(c.hypothesis) for c in batch
    )
    timer = SimTimer(load_workload(path))
    times = [timer(ir_from_knobs(path, c.knobs)) for c in batch]
    # The same pool, screened again: the first pick is its fastest state, and every
    # pick is within MARGIN of it.
    again = NkiKnobProposer(path, "k.json", "k.py", seed=2, start_pool=8)
    states = pool(again.variant_irs, again.rng, 8)
    best = ranked(states, timer)[0].seconds
    assert times[0] == best and all(t <= best * MARGIN for t in times)
    assert len({effective_key(ir_from_knobs(path, c.knobs)) for c in batch}) == len(batch)
    # Deterministic per seed.
    same = _first(NkiKnobProposer(path, "k.json", "k.py", seed=2, start_pool=8))
    assert [c.signature for c in same] == [c.signature for c in batch]


def test_a_baseline_as_good_as_the_pool_is_not_measured_again(tmp_path: Path) -> None:
    path = _workload(tmp_path)
    probe = NkiKnobProposer(path, "k.json", "k.py", seed=0, start_pool=8)
    top = _first(probe)[0]
    kernel = render_ir(ir_from_knobs(path, top.knobs))
    proposer = NkiKnobProposer(
        path,
        "k.json",
        "k.py",
        seed=0,
        start_pool=8,
        baseline_kernel=kernel,
        baseline_knobs=top.knobs,
    )
    batch = _first(proposer)
    key = effective_key(ir_from_knobs(path, top.knobs))
    assert all(c.signature != top.signature for c in batch)
    assert all(effective_key(ir_from_knobs(path, c.knobs)) != key for c in batch)


def test_no_two_candidates_run_the_same_instructions(tmp_path: Path) -> None:
    path = _workload(tmp_path)
    proposer = NkiKnobProposer(path, "k.json", "k.py", seed=1, start_pool=4)
    # A landscape where only the row block size matters.
    steps = drive(proposer, lambda k: 10.0 + k["ltiles_per_block"]["d0"], 30, tie=0.005)
    keys = [effective_key(ir_from_knobs(path, s.candidate.knobs)) for s in steps]
    assert len(keys) == 30 and len(set(keys)) == len(keys)


def test_coarsening_holds_a_block_where_a_tile_was_held(tmp_path: Path) -> None:
    path = _workload(tmp_path)
    proposer = NkiKnobProposer(path, "k.json", "k.py", start_pool=0)
    base = proposer.base
    dim = base.dim["d0"]
    assert dim.num_tiles == 4
    coarse = coarsened(base, dim, 2)
    assert coarse.ltiles_per_block["d0"] == 2
    for buf in base.buffers:
        for d, scope in base.buffer_scopes[buf.name].items():
            want = Scope.PER_BLOCK if d == "d0" and scope == Scope.PER_TILE else scope
            assert coarse.buffer_scopes[buf.name][d] == want
    back = coarsened(coarse, dim, 1)
    assert back.buffer_scopes == base.buffer_scopes and not derive(back)[1]


def _after_baseline(proposer: NkiKnobProposer, knobs: dict, seconds: float, device: str) -> list:
    """Batch 0 once the baseline (``knobs``) is measured at ``seconds`` on ``device``."""
    profile = {"device": device, "chip": "trn2", "total_time": seconds}
    base = Observation(0, "knobs", "baseline", 1.0, knobs=knobs, profile=profile)
    state = ProposerState(
        best_metric=1.0, best_knobs=knobs, better="higher", history=(base,), batch_size=1
    )
    return proposer.propose(state) or []


def test_on_sim_a_screened_start_slower_than_the_baseline_is_not_measured(
    tmp_path: Path,
) -> None:
    # On the sim device the screen's estimate is the measurement: a start it times
    # slower than the measured baseline could only be a regression.
    path = _workload(tmp_path)
    top = _first(NkiKnobProposer(path, "k.json", "k.py", seed=0, start_pool=8))[0]
    seconds = SimTimer(load_workload(path))(ir_from_knobs(path, top.knobs))

    def proposer() -> NkiKnobProposer:
        kernel = render_ir(ir_from_knobs(path, top.knobs))
        return NkiKnobProposer(
            path, "k.json", "k.py", seed=0, start_pool=8,
            baseline_kernel=kernel, baseline_knobs=top.knobs,
        )  # fmt: skip

    on_sim = _after_baseline(proposer(), top.knobs, seconds, "sim")
    assert on_sim and not any(c.hypothesis.startswith("screened start") for c in on_sim)
    # On a device the estimate is only a prior: the other variants are weighed first.
    on_device = _after_baseline(proposer(), top.knobs, seconds, "trn2")
    assert on_device and all(c.hypothesis.startswith("screened start") for c in on_device)


class _Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict]] = []

    def event(self, name: str, **data) -> None:
        self.seen.append((name, data))


def test_the_first_batch_tells_the_run_how_far_its_screen_is(tmp_path: Path, monkeypatch) -> None:
    """`kernelopt run` draws and simulates a pool before its first candidate (most of a
    minute where valid states are rare); the run's reporter hears how far it is, and
    the run prints it as the init screen's lines."""
    from kernelopt.output import Printer
    from kernelopt.proposers.first import ScreenEvents

    monkeypatch.setattr(ScreenEvents, "EVERY", 0.0)
    events = _Events()
    path = _workload(tmp_path)
    proposer = NkiKnobProposer(path, "k.json", "k.py", seed=2, start_pool=8, reporter=events)
    assert _first(proposer)
    phases = [(d["phase"], d["done"], d["total"]) for n, d in events.seen if n == "screening"]
    drawing = [p for p in phases if p[0] == "drawing"]
    simulating = [p for p in phases if p[0] == "simulating"]
    assert drawing and simulating and phases.index(drawing[-1]) < phases.index(simulating[0])
    assert [d for _, d, _ in drawing] == sorted(d for _, d, _ in drawing)
    assert simulating[0][1] == 0 and simulating[-1][1] == simulating[-1][2]
    printer = Printer(as_json=False)
    monkeypatch.setattr("click.echo", lambda text="", **_: lines.append(text))
    lines: list[str] = []
    printer.event("screening", phase="simulating", done=3, total=9, seconds=12.4)
    assert lines == ["  screening on sim: 3 of 9 states simulated (12 s)"]
