"""One contract for every Proposer: sweep, random, the NKI knob proposer and the agent.

What the loop relies on, whatever it drives: ``propose`` returns None or a
batch of valid candidates no larger than asked, never one it was told is
tried, the same ones for the same seed and state; ``observe`` takes feedback
of any verdict. Each proposer runs behind a small harness that plays the
loop's part (the state it hands over, the worktree reset after a candidate).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from kernelopt.decide import Verdict
from kernelopt.loop import Runner
from kernelopt.program import load_program
from kernelopt.proposers.agent import AgentProposer
from kernelopt.proposers.base import (
    KINDS,
    Candidate,
    Observation,
    Proposer,
    ProposerState,
    signature_of,
)
from kernelopt.proposers.nki import NkiKnobProposer
from kernelopt.proposers.space import KnobSpace, RandomProposer, SweepProposer
from kernelopt.session import make_target

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "agents" / "scripted_agent.py"
SPACE = {"A": [1, 2, 3], "B": ["x", "y"], "C": [True, False]}

AGENT_PROGRAM = """---
name: ag
target:
  kind: command
  command: python bench.py
  results: {format: stdout}
metric: {name: time, better: lower}
decide: {noise: 1%, confirm: 2, max_samples: 4}
timeout: 30s
---
Make kernel.json faster.
"""


class Harness:
    """Builds a proposer and hands it states as the loop would."""

    def __init__(self, tmp: Path):
        self.tmp = tmp

    def make(self, seed: int) -> Proposer:
        raise NotImplementedError

    def state(self, tried: frozenset[str], batch: int) -> ProposerState:
        return ProposerState(
            best_metric=None, best_knobs=None, better="lower", tried=tried, batch_size=batch
        )

    def settle(self, candidate: Candidate) -> None:
        """After a candidate, the loop puts the worktree back at BEST."""


class Sweep(Harness):
    def make(self, seed: int) -> Proposer:
        return SweepProposer(KnobSpace("ir/k.json", SPACE), {"A": 2, "B": "x", "C": True})


class Random(Harness):
    def make(self, seed: int) -> Proposer:
        return RandomProposer(KnobSpace("ir/k.json", SPACE), seed=seed, current={"A": 2})


class Nki(Harness):
    def make(self, seed: int) -> Proposer:
        return NkiKnobProposer(
            ROOT / "ir" / "matmul_lhs_rhs" / "workload.py",
            knobs_path="ir/matmul_lhs_rhs/knobs.json",
            kernel_path="ir/matmul_lhs_rhs/kernel.py",
            seed=seed,
            start_pool=0,  # a 2048^3 screen would take seconds per proposer (test_nki_screened.py)
        )


class Agent(Harness):
    """A scripted agent in a real run's worktree; each make() gets a fresh repository."""

    made = 0

    def make(self, seed: int) -> Proposer:
        Agent.made += 1
        root = self.tmp / f"repo{Agent.made}"
        (root / "programs").mkdir(parents=True)
        (root / "bench.py").write_text(
            "import json\nprint('time:', json.load(open('kernel.json'))['time'])\n"
        )
        (root / "kernel.json").write_text('{"time": 100}\n')
        (root / "programs" / "ag.md").write_text(AGENT_PROGRAM)
        for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "start")):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        program = load_program(root / "programs" / "ag.md")
        runner = Runner(program, root, make_target(program, root, "none"), tag="t")
        runner.open()
        runner.ensure_baseline()
        self.runner = runner
        plan = self.tmp / f"plan{Agent.made}.json"
        steps = [
            {"edit": {"kernel.json": f'{{"time": {90 - i}}}\n'}, "hypothesis": f"step {i}"}
            for i in range(40)
        ]
        plan.write_text(json.dumps(steps))
        command = (
            f"SCRIPTED_AGENT_PLAN={plan} SCRIPTED_AGENT_LOG={self.tmp / 'agent.log'} "
            f"{sys.executable} {AGENT}"
        )
        return AgentProposer(command, program, runner.repo, timeout_s=30)

    def state(self, tried: frozenset[str], batch: int) -> ProposerState:
        return replace(self.runner.proposer_state(), tried=tried, batch_size=batch)

    def settle(self, candidate: Candidate) -> None:
        state = self.runner.state
        assert state is not None and state.best_commit is not None
        self.runner.repo.reset_to(state.best_commit)


HARNESSES = {"sweep": Sweep, "random": Random, "nki": Nki, "agent": Agent}


@pytest.fixture(params=list(HARNESSES))
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Harness:
    return HARNESSES[request.param](tmp_path)


def rounds(
    harness: Harness, proposer: Proposer, count: int, batch: int
) -> Iterator[list[Candidate]]:
    """Up to ``count`` batches, each candidate marked tried before the next proposal."""
    tried: set[str] = set()
    for _ in range(count):
        got = proposer.propose(harness.state(frozenset(tried), batch))
        if got is None:
            return
        yield got
        for c in got:
            if c.signature:
                tried.add(c.signature)
            harness.settle(c)


def test_batches_hold_valid_candidates_no_larger_than_asked(harness: Harness) -> None:
    proposer = harness.make(seed=1)
    batches = list(rounds(harness, proposer, 3, batch=2))
    assert batches, "the proposer proposed nothing on a fresh run"
    for batch in batches:
        assert 1 <= len(batch) <= 2
        for c in batch:
            assert c.kind in KINDS and c.hypothesis.strip()
            # A change the loop can commit: files inside the tree, or the worktree itself.
            assert c.files or c.in_worktree or c.failure is not None
            for path in c.files:
                parts = PurePosixPath(path).parts
                assert not PurePosixPath(path).is_absolute() and ".." not in parts
            if c.knobs is not None:
                assert c.signature, "a knob candidate needs a signature for dedup"


def test_what_is_tried_is_never_proposed_again(harness: Harness) -> None:
    proposer = harness.make(seed=2)
    seen: list[str] = []
    for batch in rounds(harness, proposer, 6, batch=3):
        signatures = [c.signature for c in batch if c.signature]
        assert len(set(signatures)) == len(signatures)
        assert not set(signatures) & set(seen)
        seen += signatures


def test_the_same_seed_and_state_propose_the_same_candidates(harness: Harness) -> None:
    def proposals() -> list[tuple[Any, ...]]:
        proposer = harness.make(seed=7)
        return [
            (c.kind, c.hypothesis, c.signature, tuple(sorted(c.files.items())))
            for batch in rounds(harness, proposer, 3, batch=2)
            for c in batch
        ]

    assert proposals() == proposals()


def test_feedback_of_every_verdict_is_taken(harness: Harness) -> None:
    proposer = harness.make(seed=3)
    batch = proposer.propose(harness.state(frozenset(), 2)) or []
    assert batch
    for i, verdict in enumerate(Verdict):
        c = batch[i % len(batch)]
        seen = Observation(i + 1, c.kind, verdict, 1.0 + i, knobs=c.knobs, signature=c.signature)
        assert proposer.observe([seen]) is None
    for c in batch:
        harness.settle(c)
    # Still proposes after any feedback (a proposer never dies on a verdict).
    assert proposer.propose(harness.state(frozenset(), 1))


def test_a_space_tried_in_full_is_exhausted() -> None:
    """Finite spaces end: None once everything is tried (the loop then stops)."""
    space = KnobSpace("ir/k.json", SPACE)
    every = frozenset(signature_of(k) for k in space)
    for proposer in (SweepProposer(space, {"A": 1}), RandomProposer(space, seed=0)):
        state = ProposerState(None, None, "lower", tried=every, batch_size=4)
        assert proposer.propose(state) is None
