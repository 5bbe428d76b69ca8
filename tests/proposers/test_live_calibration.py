"""Live calibration of a screened run: measured candidates become pairs, the model is
refitted every few of them in a thread, later pools are estimated with the refit,
and the figures are written where status and report read them."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kernelopt.proposers.base import KNOB, Candidate, Observation, ProposerState
from kernelopt.proposers.live_calibration import (
    LiveCalibration,
    Tracer,
    live_path,
    live_summary,
    read_live,
)
from kernelopt.proposers.nki import NkiKnobProposer
from kernelopt.proposers.screen import Screen, ScreeningProposer, ScreenLog
from kernelopt.sim.estimate import EstimateJob, estimate
from kernelopt.testing.fake_trn2 import hardware

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"
WORKLOAD = KERNELS / "workload.py"
FIGURES = (
    "pairs",
    "refit_at_attempt",
    "error_before",
    "error_after",
    "spearman",
    "spearman_before",
    "params",
    "fitted",
)


def device_mfu(tracer: Tracer, kernel: str) -> float:
    """What the fake Trn2 device (the simulator with its hidden parameters) measures."""
    traced = tracer(0, 0.0, kernel)
    assert traced is not None
    return traced.mfu(hardware.params())


class Rig:
    """A screened knob search of the small matmul whose chosen candidates are 'measured'
    on the fake device's model; records the parameters each pool was estimated with."""

    def __init__(self, tmp_path: Path, every: int, pairs: list | None = None) -> None:
        self.tracer = Tracer(WORKLOAD.read_text())
        self.live = LiveCalibration(
            live_path(tmp_path, "run"),
            self.tracer,
            every=every,
            measured_pairs=lambda: list(pairs or []),
        )
        self.used: list[list[dict[str, float]]] = []
        workload = WORKLOAD.read_text()

        def job(c: Candidate) -> EstimateJob:
            return EstimateJob(workload, c.files["k.py"], "mfu", params=self.live.params)

        def estimator(jobs: list[EstimateJob]) -> list[dict[str, Any]]:
            self.used.append([j.params for j in jobs])
            return [estimate(j) for j in jobs]

        screen = Screen(3, 2, "higher", ScreenLog(tmp_path / "screen.jsonl"), job)
        inner = NkiKnobProposer(
            WORKLOAD, knobs_path="k.json", kernel_path="k.py", seed=3, start_pool=0
        )
        self.proposer = ScreeningProposer(inner, screen, estimator, self.live)
        self.attempt = 0
        self.chosen: list[Candidate] = []

    def round(self) -> list[Candidate]:
        state = ProposerState(best_metric=None, best_knobs=None, better="higher")
        batch = self.proposer.propose(state) or []
        for c in batch:
            self.attempt += 1
            metric = device_mfu(self.tracer, c.files["k.py"])
            obs = Observation(self.attempt, KNOB, "regression", metric, c.knobs, c.signature)
            self.proposer.observe([obs])
        self.chosen += batch
        return batch


def test_a_refit_after_enough_pairs_changes_the_parameters_of_later_pools(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path, every=4)
    while len(rig.live.pairs) < 4:  # 1 candidate (the one rewrite variant), then 2 a round
        rig.round()
        assert not rig.live.busy and not rig.live.path.exists()
    measured = len(rig.live.pairs)
    refitting = rig.round()  # the refit starts as this round is drawn; its pool is not refitted
    assert rig.live.busy
    assert rig.used[-1] and all(p == {} for p in rig.used[-1])
    assert all(c.extra["screen"]["refit"] is None for c in refitting)
    refitted = rig.round()
    figures = json.loads(rig.live.path.read_text())
    assert set(FIGURES) <= set(figures)
    assert figures["pairs"] == measured and figures["refit_at_attempt"] == measured
    assert figures["params"] and set(figures["params"]) == set(figures["fitted"])
    assert figures["error_after"] < figures["error_before"]
    # The next pool was estimated with the fitted parameters, and its notes say so.
    assert rig.used[-1] and all(p == figures["params"] for p in rig.used[-1])
    assert all(c.extra["screen"]["refit"] == measured for c in refitted)
    assert read_live(tmp_path, "run") == figures
    summary = live_summary(figures)
    assert f"over {measured} measurements (refit at attempt {measured})" in summary


def test_a_resumed_run_keeps_its_refit_and_counts_on_from_its_pairs(tmp_path: Path) -> None:
    rig = Rig(tmp_path, every=4)
    while not rig.live.path.exists():
        rig.round()
    rig.proposer.close(wait=True)
    first = json.loads(rig.live.path.read_text())
    pending = len(rig.live.pairs) - first["pairs"]
    # The runner restarts: its pairs come back from the run's measured attempts.
    pairs = list(rig.live.pairs.values())
    again = Rig(tmp_path, every=4 if pending < 4 else pending + 1, pairs=pairs)
    again.attempt = rig.attempt
    batch = again.round()  # the file's refit is used at once
    assert again.used[0] and all(p == first["params"] for p in again.used[0])
    assert len(again.live.pairs) == len(pairs) + len(batch)
    while not again.live.busy:
        again.round()
    again.round()
    second = json.loads(again.live.path.read_text())
    assert second["pairs"] > first["pairs"] and second["pairs"] >= len(pairs)
    assert second["pairs"] == len([a for a in again.live.pairs if a <= second["refit_at_attempt"]])


def test_a_metric_that_is_not_mfu_has_no_live_refit(tmp_path: Path) -> None:
    from kernelopt.program import load_program
    from kernelopt.proposers.live_calibration import live_for

    for name in ("w.py", "k.py", "k.json"):
        (tmp_path / name).write_text("")
    text = (
        "---\nname: p\ntarget: {kind: nki, workload: w.py, kernel: k.py, knobs: k.json}\n"
        "metric: {name: %s, better: %s}\nsearch: {screen: {pool: 4, top: 1}}\n---\n"
    )
    (tmp_path / "p.md").write_text(text % ("time", "lower"))
    timed = load_program(tmp_path / "p.md", root=tmp_path)
    assert live_for(timed, tmp_path, tmp_path, "p-t", "", {}) is None
    (tmp_path / "p.md").write_text(text % ("mfu", "higher"))
    mfu = load_program(tmp_path / "p.md", root=tmp_path)
    live = live_for(mfu, tmp_path, tmp_path, "p-t", "", {})
    assert live is not None and live.every == 5


def _pairs(count: int) -> list:
    tracer = Tracer(WORKLOAD.read_text())
    inner = NkiKnobProposer(WORKLOAD, knobs_path="k.json", kernel_path="k.py", seed=1, start_pool=0)
    state = ProposerState(best_metric=None, best_knobs=None, better="higher", batch_size=count)
    pairs: list = []
    while len(pairs) < count:
        for c in inner.propose(state) or []:
            traced = tracer(len(pairs), 0.0, c.files["k.py"])
            if traced is not None and len(pairs) < count:
                measured = traced.mfu(hardware.params())
                pairs.append(dataclasses.replace(traced, measured=measured))
    return pairs


def _refits() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kernelopt-refit"]


def test_closing_stops_a_running_refit_and_waiting_records_it(tmp_path: Path) -> None:
    pairs = _pairs(20)
    stopped = LiveCalibration(tmp_path / "a.live.json", Tracer(""), measured_pairs=lambda: pairs)
    stopped.restore()
    stopped.before_round()
    assert stopped.busy and _refits()
    began = time.monotonic()
    stopped.close()
    assert time.monotonic() - began < 1.0 and not _refits() and not stopped.busy
    waited = LiveCalibration(tmp_path / "b.live.json", Tracer(""), measured_pairs=lambda: pairs)
    waited.restore()
    waited.before_round()
    waited.close(wait=True)
    assert not _refits()
    assert json.loads(waited.path.read_text())["pairs"] == 20


@pytest.mark.parametrize("figures", [{"kind": "x"}, None])
def test_a_run_without_live_figures_reads_as_none(tmp_path: Path, figures: Any) -> None:
    path = tmp_path / "kernelopt" / "calibration" / "r.live.json"
    if figures is not None:
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(figures))
    assert read_live(tmp_path, "r") is None


def test_the_summary_says_when_the_rank_correlation_is_undefined() -> None:
    # spearman is None when the held-out predictions (or the measurements) are all equal.
    figures = {"spearman": None, "error_after": 0.5, "pairs": 4, "refit_at_attempt": 4}
    assert live_summary(figures).startswith("sim vs device: ρ n/a, error 0.50 pp over 4")
    assert "ρ 0.25," in live_summary({**figures, "spearman": 0.25})
