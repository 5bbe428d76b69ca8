"""Messages that describe the real state: knob labels as committed, a tiny
BEST that does not make every later candidate a tie."""

from __future__ import annotations

import json

import pytest
from benchmarks_support.gitrepo import Cli, RepoFactory, git

from kernelopt.hypothesis import knob_label

pytestmark = pytest.mark.slow  # kernelopt end to end, a few seconds each


def test_a_knob_label_describes_the_change_from_the_commits_parent(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(x0=100, space=[100, 80, 70])
    cli("run", str(repo.program), "--tag", "t", "--max-candidates", "0", cwd=repo.root)
    wt = repo.worktree()
    (wt / "knobs.json").write_text('{"X": 90}\n')  # BEST moves without the sweep knowing
    assert (
        json.loads(cli("try", "-m", "X 90 by hand", "--json", cwd=wt).stdout)["verdict"] == "keep"
    )

    cli("run", str(repo.program), "--tag", "t", "--max-candidates", "1", cwd=repo.root)

    third = repo.attempt_refs()[2]
    assert json.loads(git(repo.root, "show", f"{third}^:knobs.json"))["X"] == 90
    assert json.loads(git(repo.root, "show", f"{third}:knobs.json"))["X"] == 80
    assert repo.notes()[2]["hypothesis"] == "X 90 -> 80"
    assert git(repo.root, "log", "-1", "--format=%s", third).strip().endswith("X 90 -> 80")


def test_knob_label_keeps_other_hypotheses_and_names_every_change() -> None:
    assert knob_label("X 1 -> 5", '{"X": 6, "Y": 2}', '{"X": 5, "Y": 3}') == "X 6 -> 5, Y 2 -> 3"
    assert knob_label("X 1 -> 5", '{"X": 5}', '{"X": 5}') == "re-measure the current knobs"
    assert knob_label("a larger tile keeps it in SBUF", '{"X": 6}', '{"X": 5}') == (
        "a larger tile keeps it in SBUF"
    )
    assert knob_label("X 1 -> 5", "not json", '{"X": 5}') == "X 1 -> 5"
    assert knob_label("X 1 -> 5", None, '{"X": 5}') == "X null -> 5"  # a new knob file


def test_a_best_of_1e_minus_300_does_not_make_everything_after_it_a_tie(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    # 1e10 / 1e-300 overflowed to inf: its log gain was inf, its spread NaN, and
    # the NaN pooled into every later decision, so none could ever be decided.
    repo = bench_repo(space=[100, 1e-300, 1e10, 5e-301, 2e-301])

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    notes = repo.notes()
    assert [n["verdict"] for n in notes.values()] == [
        "baseline",
        "keep",
        "regression",
        "keep",
        "keep",
    ]
    assert all(
        n["spread"] is None or n["spread"]["var"] == n["spread"]["var"] for n in notes.values()
    )
