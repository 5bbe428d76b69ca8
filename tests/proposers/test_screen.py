"""The screening wrapper on its own: pools estimated on sim, the best passed on, the
rest (failed CPU checks included) recorded and shown to the inner proposer."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelopt.program import ProgramError, load_program
from kernelopt.proposers.base import KNOB, Candidate, Observation, ProposerState
from kernelopt.proposers.screen import Screen, ScreeningProposer, ScreenLog
from kernelopt.sim.estimate import EstimateJob

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"


class Fixed:
    """An inner proposer with one batch to give; remembers what it saw."""

    def __init__(self, batch: list[Candidate]) -> None:
        self.batch: list[Candidate] | None = batch
        self.seen: list[Observation] = []
        self.asked: list[ProposerState] = []

    def propose(self, state: ProposerState) -> list[Candidate] | None:
        self.asked.append(state)
        batch, self.batch = self.batch, None
        return batch

    def observe(self, results: list[Observation]) -> None:
        self.seen += results


def _candidate(name: str, kernel: str) -> Candidate:
    text = (KERNELS / kernel).read_text()
    return Candidate(KNOB, name, files={"k.py": text}, knobs={"name": name}, signature=name)


def _screen(tmp_path: Path, top: int) -> Screen:
    workload = (KERNELS / "workload.py").read_text()

    def job(c: Candidate) -> EstimateJob:
        return EstimateJob(workload_text=workload, kernel_text=c.files["k.py"], metric="mfu")

    return Screen(pool=3, top=top, better="higher", log=ScreenLog(tmp_path / "s.jsonl"), job=job)


def test_a_kernel_failing_the_cpu_check_is_recorded_and_never_passed_on(tmp_path: Path) -> None:
    inner = Fixed(
        [
            _candidate("wrong", "kernel_wrong_rows.py"),
            _candidate("right", "kernel.py"),
            _candidate("oom", "kernel_psum_oom.py"),
        ]
    )
    screen = _screen(tmp_path, top=2)
    proposer = ScreeningProposer(inner, screen)
    state = ProposerState(best_metric=None, best_knobs=None, better="higher")
    batch = proposer.propose(state)
    assert batch is not None and [c.signature for c in batch] == ["right"]
    assert batch[0].extra["screen"]["rank"] == 1 and batch[0].extra["screen"]["estimate"] > 0
    assert inner.asked[0].batch_size == 3
    entries = {e["signature"]: e for e in screen.log.read()}
    assert entries["wrong"]["status"] == "incorrect" and not entries["wrong"]["chosen"]
    assert entries["oom"]["status"] == "failed" and entries["oom"]["error"]
    assert entries["right"]["chosen"]
    assert {o.signature: o.verdict for o in inner.seen} == {"wrong": "incorrect", "oom": "failed"}
    # A resumed run's wrapper reads them back and shows them to its proposer.
    again = Fixed([])
    ScreeningProposer(again, _screen(tmp_path, top=2)).propose(state)
    assert {"wrong", "oom"} <= again.asked[0].tried
    assert {o.signature for o in again.seen} == {"wrong", "oom"}


def test_the_best_estimates_go_on_in_rank_order(tmp_path: Path) -> None:
    estimates = iter([10.0, 30.0, 20.0])

    def estimator(jobs: list[EstimateJob]) -> list[dict]:
        return [
            {"status": "ok", "estimate": next(estimates), "error": "", "profile": {}} for _ in jobs
        ]

    names = ["a", "b", "c"]
    inner = Fixed([_candidate(n, "kernel.py") for n in names])
    proposer = ScreeningProposer(inner, _screen(tmp_path, top=2), estimator)
    batch = proposer.propose(ProposerState(best_metric=None, best_knobs=None, better="higher"))
    assert [c.signature for c in batch or []] == ["b", "c"]
    assert [o.verdict for o in inner.seen] == ["screened"]


PROGRAM = """---
name: p
target: {{kind: nki, workload: w.py, kernel: k.py, knobs: k.json}}
metric: {{name: mfu, better: higher}}
search: {{screen: {screen}}}
---
"""


@pytest.mark.parametrize(
    ("screen", "problem"),
    [
        ("{pool: 4}", "search.screen.top"),
        ("{pool: 2, top: 3}", "search.screen.top"),
        ("{pool: 4, top: 2, refit_every: -1}", "search.screen.refit_every: must be 0 or more"),
        ("{pool: 4, top: 2, refit_every: often}", "search.screen.refit_every"),
    ],
)
def test_screen_keys_must_name_pool_and_a_smaller_top(
    tmp_path: Path, screen: str, problem: str
) -> None:
    for name in ("w.py", "k.py", "k.json"):
        (tmp_path / name).write_text("")
    (tmp_path / "p.md").write_text(PROGRAM.format(screen=screen))
    with pytest.raises(ProgramError) as err:
        load_program(tmp_path / "p.md", root=tmp_path)
    assert problem in str(err.value)
    (tmp_path / "p.md").write_text(PROGRAM.format(screen="{pool: 8, top: 2}"))
    screened = load_program(tmp_path / "p.md", root=tmp_path).screen
    assert screened is not None and (screened.pool, screened.top) == (8, 2)
    assert screened.refit_every == 5  # the default
