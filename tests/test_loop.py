"""`kernelopt run` end to end on real repositories: what lands in git for each verdict."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelopt import ledger
from kernelopt.loop import AttemptResult, Runner
from kernelopt.measurement import Measurement
from kernelopt.program import load_program
from kernelopt.proposers.base import Candidate
from kernelopt.session import Session
from kernelopt.targets.base import Target


def run(cli: Cli, repo: BenchRepo, *extra: str) -> str:
    result = cli("run", str(repo.program), "--tag", "t", *extra, cwd=repo.root)
    assert result.exit_code == 0, result.output + result.stderr
    return result.output


def assert_at_best(repo: BenchRepo) -> None:
    """Branch, best ref and worktree agree, and the worktree holds nothing else."""
    best = repo.rev(repo.ref("best"))
    assert best is not None
    assert repo.rev(repo.branch()) == best
    assert git(repo.worktree(), "rev-parse", "HEAD").strip() == best
    assert git(repo.worktree(), "status", "--porcelain") == ""


def test_baseline_is_measured_committed_and_noted(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=None)

    out = run(cli, repo)

    assert "BASELINE" in out
    refs = repo.attempt_refs()
    assert list(refs) == [0]
    note = repo.note(refs[0])
    assert note["verdict"] == "baseline"
    assert note["metric"] == 100.0
    assert note["counters"]["consecutive_regressions"] == 0
    message = git(repo.root, "log", "-1", "--format=%B", refs[0])
    assert message.startswith("kernelopt #0 baseline: ")
    assert f"Kernelopt-Run: {repo.run_id()}" in message
    assert "Kernelopt-Attempt: 0" in message
    assert "Kernelopt-Kind: baseline" in message
    ledger = repo.ledger()
    baseline_rows = [line for line in ledger.splitlines() if "| baseline |" in line]
    assert len(baseline_rows) == 1 and f"`{refs[0][:10]}`" in baseline_rows[0]
    assert "time 100" in baseline_rows[0]
    # The ledger commit sits on top of the measured commit and is BEST_COMMIT.
    assert git(repo.root, "rev-parse", f"{repo.ref('best')}^").strip() == refs[0]
    assert_at_best(repo)


def test_keep_advances_branch_best_and_ledger(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80])

    out = run(cli, repo, "--max-candidates", "1")

    assert "KEEP" in out
    refs = repo.attempt_refs()
    note = repo.note(refs[1])
    assert note["verdict"] == "keep"
    assert note["metric"] == 80.0 and note["previous_best"] == 100.0
    assert note["gain"] == 0.2
    assert note["knobs"] == {"X": 80}
    assert len(note["samples"]) >= 2  # BEST re-measured beside it: a noisy target
    assert git(repo.root, "show", f"{refs[1]}:knobs.json").strip() == '{\n  "X": 80\n}'
    subjects = repo.branch_subjects()
    assert subjects[0].startswith("kernelopt: keep #1 (+20.00% time)")
    assert subjects[1] == "kernelopt #1 knob: X 100 -> 80"
    assert subjects[2].startswith("kernelopt: baseline")
    assert git(repo.root, "rev-parse", f"{repo.ref('best')}^").strip() == refs[1]
    keep_rows = [line for line in repo.ledger().splitlines() if "| keep |" in line]
    assert len(keep_rows) == 1
    assert f"`{refs[1][:10]}`" in keep_rows[0] and "+20.00%" in keep_rows[0]
    assert "time 80" in keep_rows[0] and "X 100 -> 80" in keep_rows[0]
    assert_at_best(repo)


def test_tie_and_regression_are_reverted_but_kept_reachable(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 100.2, 130])
    best_before = None

    run(cli, repo, "--max-candidates", "0")
    best_before = repo.rev(repo.ref("best"))
    run(cli, repo, "--max-candidates", "2")

    notes = repo.notes()
    assert [notes[n]["verdict"] for n in (1, 2)] == ["tie", "regression"]
    assert notes[1]["counters"]["consecutive_regressions"] == 0
    assert notes[2]["counters"]["consecutive_regressions"] == 1
    assert notes[2]["gain"] < -0.2
    assert repo.rev(repo.ref("best")) == best_before
    # Discarded attempts are reachable through their refs, never through the branch.
    branch_commits = git(repo.root, "rev-list", repo.branch()).split()
    for n in (1, 2):
        sha = repo.attempt_refs()[n]
        assert sha not in branch_commits
        assert git(repo.root, "cat-file", "-t", sha).strip() == "commit"
    assert not any(s.startswith(("kernelopt #1", "kernelopt #2")) for s in repo.branch_subjects())
    ledger = repo.ledger()
    assert "| tie |" not in ledger and "| regression |" not in ledger
    assert_at_best(repo)


def test_regression_streak_stops_the_run_with_a_summary(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(
        space=[100, 130, 140, 150, 160],
        decide={"max_consecutive_regressions": 3, "recent_window": 2},
    )

    out = run(cli, repo)

    assert "3 consecutive measured regressions" in out
    assert list(repo.attempt_refs()) == [0, 1, 2, 3]
    stop = repo.rev(repo.ref("stop"))
    assert stop is not None and stop == repo.rev(repo.ref("best"))
    assert repo.note(stop)["reason"] == "3 consecutive measured regressions"
    ledger = repo.ledger()
    summary = ledger[ledger.index("### Stop Summary") :]
    assert "- reason: 3 consecutive measured regressions" in summary
    baseline = repo.attempt_refs()[0]
    assert "time 100" in summary
    # The window holds the last two regressions only.
    table = [line for line in summary.splitlines() if line[:3].strip("| ").isdigit()]
    assert [line.split("|")[1].strip() for line in table] == ["2", "3"]
    assert "100 -> 150" in table[1] and "knobs.json" in table[1]
    assert baseline in git(repo.root, "rev-list", repo.branch())

    again = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    assert again.exit_code == 0
    assert "already stopped" in again.output
    assert list(repo.attempt_refs()) == [0, 1, 2, 3]


def test_failures_reset_the_streak_and_keep_the_output_tail(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 130, "fail", "hang"], timeout="1s")

    run(cli, repo, "--max-candidates", "3")

    notes = repo.notes()
    assert [notes[n]["verdict"] for n in (1, 2, 3)] == ["regression", "failed", "failed"]
    assert notes[2]["counters"]["consecutive_regressions"] == 0
    assert "exited with status 1" in notes[2]["error"]
    assert "the kernel crashed" in notes[2]["measurement"]["log_tail"]
    assert notes[3]["measurement"]["status"] == "timeout"
    assert "timed out after 1 s" in notes[3]["error"]
    assert_at_best(repo)


def test_wrong_answers_are_incorrect_and_never_kept(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, "wrong"])

    run(cli, repo, "--max-candidates", "1")

    note = repo.notes()[1]
    assert note["verdict"] == "incorrect"
    assert "err == 0" in note["error"] and "failed on 2 of 2 rows" in note["error"]
    assert "| keep |" not in repo.ledger()
    assert_at_best(repo)


def test_improving_one_class_and_regressing_another_is_diverged(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 130, "split:80:130"], classes=True)

    run(cli, repo, "--max-candidates", "2")

    notes = repo.notes()
    assert notes[1]["verdict"] == "regression"
    note = notes[2]
    assert note["verdict"] == "diverged"
    assert note["improved"] == ["cls=a"] and note["regressed"] == ["cls=b"]
    # Per-class gains are plain relative changes, like the overall gain.
    assert note["classes"]["cls=a"] == pytest.approx(0.20)
    assert note["classes"]["cls=b"] == pytest.approx(-0.30)
    # Neither a win nor a clean regression: the streak is left as it was.
    assert note["counters"]["consecutive_regressions"] == 1
    assert "| keep |" not in repo.ledger()
    assert_at_best(repo)


def test_baseline_knobs_are_not_measured_again_after_a_keep(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 90])

    run(cli, repo, "--max-candidates", "2")

    knobs = [note.get("knobs") for n, note in repo.notes().items() if n > 0]
    assert knobs == [{"X": 80}, {"X": 90}]


def test_benchmark_output_files_never_enter_candidate_commits(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    # No .gitignore: results/out.csv lands in the worktree after every measurement.
    repo = bench_repo(space=[100, 80, 70], ignore_results=False)

    run(cli, repo, "--max-candidates", "2")

    for n, sha in repo.attempt_refs().items():
        files = git(repo.root, "ls-tree", "-r", "--name-only", sha).split()
        assert "results/out.csv" not in files, f"attempt {n} committed the benchmark's output"
    assert [repo.notes()[n]["verdict"] for n in (1, 2)] == ["keep", "keep"]
    assert git(repo.worktree(), "status", "--porcelain", "--untracked-files=no") == ""


def test_the_users_checkout_is_left_exactly_as_it_was(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80, 130])
    root = repo.root
    (root / "bench.py").write_text((root / "bench.py").read_text() + "# local edit\n")
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")
    (root / "knobs.json").write_text('{"X": 55}\n')
    (root / "untracked.txt").write_text("mine\n")

    def snapshot() -> dict[str, object]:
        files = {
            str(p.relative_to(root)): p.read_bytes()
            for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts
        }
        return {
            "status": git(root, "status", "--porcelain", "--untracked-files=all"),
            "diff": git(root, "diff"),
            "cached": git(root, "diff", "--cached"),
            "head": git(root, "rev-parse", "HEAD"),
            "branch": git(root, "symbolic-ref", "HEAD"),
            "files": files,
        }

    before = snapshot()
    run(cli, repo, "--max-candidates", "2")
    after = snapshot()

    assert after == before
    assert [repo.notes()[n]["verdict"] for n in (1, 2)] == ["keep", "regression"]
    # The run measured the committed code, not the user's uncommitted knobs.
    assert repo.notes()[0]["metric"] == 100.0


def test_noisy_benchmark_keeps_a_real_win_and_ties_a_null_change(
    bench_repo: RepoFactory, cli: Cli, monkeypatch
) -> None:
    monkeypatch.setenv("BENCH_NOISE", "0.002")
    repo = bench_repo(space=[100, 80, 80.05], decide={"max_samples": 6})

    run(cli, repo, "--max-candidates", "2")

    notes = repo.notes()
    assert notes[1]["verdict"] == "keep"
    assert notes[2]["verdict"] == "tie"
    # Each decision rests on interleaved pairs, every one with a BEST sample.
    for n in (1, 2):
        samples = notes[n]["samples"]
        assert 2 <= len(samples) <= 6
        assert all(s["best"] is not None for s in samples)


def test_run_without_a_knob_space_stops_after_the_baseline(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=None)

    out = run(cli, repo)

    assert "no proposer" in out
    assert list(repo.attempt_refs()) == [0]


def test_worktree_lives_under_the_git_directory(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=None)

    run(cli, repo)

    listing = git(repo.root, "worktree", "list", "--porcelain")
    assert f"worktree {repo.worktree()}" in listing
    assert f"branch refs/heads/{repo.branch()}" in listing
    assert Path(repo.worktree(), "bench.py").is_file()


def test_a_failed_baseline_is_kept_and_the_next_start_measures_a_new_one(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo("fail", space=[100, 80])

    first = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert first.exit_code == 1
    assert "baseline could not be measured" in first.output
    assert repo.rev(repo.ref("best")) is None
    # The user fixes the benchmark input on their branch and starts again.
    (repo.root / "knobs.json").write_text('{\n  "X": 100\n}\n')
    git(repo.root, "commit", "-q", "-am", "a knob value the benchmark can run")
    second = cli("run", str(repo.program), "--tag", "t", "--max-candidates", "1", cwd=repo.root)

    assert second.exit_code == 0, second.output
    notes = repo.notes()
    assert [notes[n]["verdict"] for n in sorted(notes)] == ["failed", "baseline", "keep"]
    assert notes[1]["metric"] == 100.0
    assert "| baseline |" in repo.ledger()
    assert repo.attempt_refs()[0] not in git(repo.root, "rev-list", repo.branch())
    assert [r["run"] for r in cli.json("runs", cwd=repo.root)] == [repo.run_id()]


def test_target_reached_and_candidate_budget_end_the_run(bench_repo: RepoFactory, cli: Cli) -> None:
    reached = bench_repo(space=[100, 130, 80, 70], stop={"target": 80})
    budget = bench_repo(space=[100, 130, 140, 150, 160], stop={"max_candidates": 2})

    out = run(cli, reached)
    run(cli, budget, "--max-candidates", "1")
    again = run(cli, budget)

    assert "target reached: time 80" in out
    assert [n["verdict"] for n in reached.notes().values()] == ["baseline", "regression", "keep"]
    # The budget counts the run's candidates, across invocations.
    assert "candidate budget used: 2 of 2" in again
    assert list(budget.attempt_refs()) == [0, 1, 2]


def test_a_lucky_best_sample_does_not_make_an_equal_candidate_a_regression(
    bench_repo: RepoFactory, cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The baseline's only sample reads 50 instead of 100; the candidate ("split:100:100",
    # another tree with the same speed) must be judged against BEST re-measured.
    lucky = tmp_path / "lucky"
    lucky.touch()
    monkeypatch.setenv("BENCH_LUCKY_FILE", str(lucky))
    repo = bench_repo(space=[100, "split:100:100"])

    run(cli, repo, "--max-candidates", "1")

    notes = repo.notes()
    assert notes[0]["metric"] == 50.0
    assert notes[1]["verdict"] == "tie"
    assert notes[1]["gain"] == pytest.approx(0.0)
    assert all(s["best"] == 100.0 for s in notes[1]["samples"])


def test_stdout_results_and_a_removed_worktree(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80, 70], results="stdout")
    run(cli, repo, "--max-candidates", "1")
    shutil.rmtree(repo.worktree())

    run(cli, repo, "--max-candidates", "1")

    notes = repo.notes()
    assert [n["verdict"] for n in notes.values()] == ["baseline", "keep", "keep"]
    assert notes[2]["measurement"]["extra"]["results_file"] == "stdout"
    assert_at_best(repo)


def test_a_repository_without_an_identity_gets_kernelopt_as_author(
    bench_repo: RepoFactory, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = bench_repo(space=None)
    git(repo.root, "config", "--unset", "user.name")
    git(repo.root, "config", "--unset", "user.email")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")

    run(cli, repo)

    sha = repo.attempt_refs()[0]
    assert git(repo.root, "log", "-1", "--format=%an <%ae>", sha).strip() == (
        "kernelopt <kernelopt@localhost>"
    )


def test_a_second_runner_on_the_same_run_is_refused(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80])
    run(cli, repo, "--max-candidates", "0")
    session = Session.create(load_program(repo.program), tag="t")

    with session.runner.locked():
        busy = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert busy.exit_code == 3
    assert f"pid {os.getpid()}" in busy.stderr
    assert list(repo.attempt_refs()) == [0]


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=200))
def test_any_hypothesis_renders_as_one_ledger_row_of_nine_cells(hypothesis: str) -> None:
    row = ledger.LedgerRow(
        "2026-01-01", "0" * 40, "keep", "python b.py", "all", "k", "t 1", "+1%", hypothesis
    )

    text = ledger.render_row(row)

    assert text.endswith("|\n") and text.count("\n") == 1
    unescaped = re.findall(r"(?<!\\)\|", text)
    assert len(unescaped) == 10


@dataclass
class KnobIsTheTime(Target):
    """A deterministic target (like the simulator): the time is knobs.json's X."""

    deterministic: bool = True
    device: str = "sim"
    calls: int = 0

    def measure(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        self.calls += 1
        x = json.loads((tree / "knobs.json").read_text())["X"]
        return Measurement(status="ok", metrics={"time": float(x)}, deterministic=True)


def test_deterministic_target_is_measured_once_and_keeps_any_win(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=None, decide={"noise": "1%"})
    target = KnobIsTheTime()
    runner = Runner(load_program(repo.program), repo.root, target, tag="t")
    runner.open()
    runner.ensure_baseline()

    def attempt(x: float) -> AttemptResult:
        return runner.try_candidate(
            Candidate("knob", f"X -> {x}", {"knobs.json": json.dumps({"X": x}) + "\n"}, {"X": x})
        )

    small_win = attempt(99.5)
    small_loss = attempt(99.9)
    big_loss = attempt(120)
    calls = target.calls
    again = attempt(120)

    assert (small_win.verdict, small_win.samples) == ("keep", 1)
    assert small_loss.verdict == "tie"
    assert big_loss.verdict == "regression"
    # The same tree on a deterministic device is never measured twice.
    assert again.reused_from == big_loss.attempt and target.calls == calls
    assert target.calls == 4
    notes = repo.notes()
    assert all(s["best"] is None for n in (1, 2, 3) for s in notes[n]["samples"])
    assert notes[1]["device"] == "sim"
