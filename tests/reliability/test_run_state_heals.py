"""Self-healing run state: a worktree an agent moved off the run's branch, a
deleted or wrong best ref, a corrupt note. Each is repaired from what git
still holds, with a warning, or refused with the command to run; never a
wedge, never a silent loss, never a new baseline."""

from __future__ import annotations

import json

import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git

pytestmark = pytest.mark.slow  # each runs kernelopt end to end, a few seconds


def started(bench_repo: RepoFactory, cli: Cli, **options: object) -> BenchRepo:
    """A run "t" with its baseline (X 100) and nothing else."""
    repo = bench_repo(**options)
    result = cli("run", str(repo.program), "--tag", "t", "--max-candidates", "0", cwd=repo.root)
    assert result.exit_code == 0, result.output
    return repo


def verdicts(repo: BenchRepo) -> list[str]:
    return [n["verdict"] for n in repo.notes().values()]


def knobs_of(repo: BenchRepo, rev: str) -> dict:
    return json.loads(git(repo.root, "show", f"{rev}:knobs.json"))


def on_run_branch(repo: BenchRepo) -> bool:
    head = git(repo.worktree(), "symbolic-ref", "-q", "HEAD", check=False).strip()
    return head == f"refs/heads/{repo.branch()}"


def test_try_on_a_branch_the_agent_created_carries_the_edit_over(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    wt = repo.worktree()
    git(wt, "checkout", "-q", "-b", "my-idea")
    (wt / "knobs.json").write_text('{"X": 80}\n')

    result = cli("try", "-m", "X 80", "--json", cwd=wt)

    assert result.exit_code == 0, result.output
    assert "not a kernelopt run worktree" not in result.output
    assert json.loads(result.stdout)["verdict"] == "keep"
    assert "put it back on kernelopt/x-t" in result.stderr
    assert on_run_branch(repo)
    assert verdicts(repo) == ["baseline", "keep"]
    assert knobs_of(repo, repo.attempt_refs()[1]) == {"X": 80}
    assert knobs_of(repo, repo.branch()) == {"X": 80}


def test_try_carries_commits_the_agent_made_on_a_detached_head(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    wt = repo.worktree()
    git(wt, "checkout", "-q", "--detach")
    (wt / "knobs.json").write_text('{"X": 90}\n')
    git(wt, "commit", "-qam", "agent: X 90")
    (wt / "knobs.json").write_text('{"X": 80}\n')  # and an edit on top, uncommitted
    (wt / "notes.txt").write_text("why 80\n")

    result = cli("try", "-m", "X 80", "--json", cwd=wt)

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verdict"] == "keep"
    assert "1 commit(s) made on top of it and the uncommitted edit" in result.stderr
    attempt = repo.attempt_refs()[1]
    assert knobs_of(repo, attempt) == {"X": 80}
    assert git(repo.root, "show", f"{attempt}:notes.txt") == "why 80\n"
    assert on_run_branch(repo)
    # The next run goes on from there: no wedge ("cannot lock ref ... expected").
    again = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    assert again.exit_code == 0, again.output
    assert "cannot lock ref" not in again.output


def test_a_commit_the_agent_made_on_the_run_branch_is_the_candidate(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    wt = repo.worktree()
    (wt / "knobs.json").write_text('{"X": 80}\n')
    git(wt, "commit", "-qam", "agent: X 80")

    result = cli("try", "-m", "X 80", "--json", cwd=wt)

    assert "nothing to try" not in result.output
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verdict"] == "keep"
    assert knobs_of(repo, repo.attempt_refs()[1]) == {"X": 80}


def test_a_worktree_that_does_not_build_on_the_branch_is_refused_with_what_to_run(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    wt = repo.worktree()
    (wt / "knobs.json").write_text('{"X": 80}\n')
    assert cli("try", "-m", "X 80", cwd=wt).exit_code == 0  # BEST moves past the baseline
    baseline = repo.attempt_refs()[0]
    git(wt, "checkout", "-q", baseline)  # an older commit, and an edit on top of it
    (wt / "knobs.json").write_text('{"X": 70}\n')

    refused = cli("try", "-m", "X 70", cwd=wt)

    assert refused.exit_code == 2, refused.output
    assert "not a kernelopt run worktree" not in refused.output
    assert "git stash -u && git checkout kernelopt/x-t && git stash pop" in refused.output
    assert (wt / "knobs.json").read_text() == '{"X": 70}\n'  # nothing lost
    assert verdicts(repo) == ["baseline", "keep"]
    # Doing what it says works.
    git(wt, "stash", "-u")
    git(wt, "checkout", "-q", "kernelopt/x-t")
    git(wt, "checkout", "stash@{0}", "--", "knobs.json")
    result = cli("try", "-m", "X 70", "--json", cwd=wt)
    assert json.loads(result.stdout)["verdict"] == "keep", result.output


def test_run_after_the_agent_left_the_worktree_on_another_branch(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli, space=[100, 80, 70])
    wt = repo.worktree()
    git(wt, "checkout", "-q", "-b", "elsewhere")
    (wt / "idea.txt").write_text("an edit run does not measure\n")

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    assert "cannot lock ref" not in result.output
    assert verdicts(repo) == ["baseline", "keep", "keep"]
    assert on_run_branch(repo)
    assert knobs_of(repo, repo.branch()) == {"X": 70}
    # run starts from BEST; the edit is set aside and named, not lost.
    aside = repo.rev(repo.ref("carried"))
    assert aside and git(repo.root, "show", f"{aside}:idea.txt") == "an edit run does not measure\n"
    assert f"checkout {aside[:12]} -- ." in result.output


def test_a_deleted_best_ref_is_rebuilt_never_a_new_baseline(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 130, 70])
    cli("run", str(repo.program), "--tag", "t", "--max-candidates", "2", cwd=repo.root)
    assert verdicts(repo) == ["baseline", "keep", "regression"]
    kept_ledger = repo.rev(repo.ref("best"))
    git(repo.root, "update-ref", "-d", repo.ref("best"))
    status = cli("status", "--json", cwd=repo.root)
    assert json.loads(status.stdout)["best_attempt"] == 1
    assert "the best ref is missing" in status.stderr

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    assert "rebuilt from the notes: BEST is attempt #1" in result.output
    assert verdicts(repo) == ["baseline", "keep", "regression", "keep"]  # no second baseline
    assert repo.notes()[3]["previous_best"] == 80.0
    assert git(repo.root, "rev-parse", f"{repo.ref('best')}~1^").strip() == kept_ledger


def test_a_best_ref_moved_to_a_discarded_attempt_is_put_back(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 130, 70])
    cli("run", str(repo.program), "--tag", "t", "--max-candidates", "2", cwd=repo.root)
    kept_ledger = repo.rev(repo.ref("best"))
    git(repo.root, "update-ref", repo.ref("best"), repo.attempt_refs()[2])  # the regression

    status = cli("status", "--json", cwd=repo.root)
    assert json.loads(status.stdout)["best_attempt"] == 1
    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    assert f"pointed at {repo.attempt_refs()[2][:12]}" in result.output
    assert verdicts(repo) == ["baseline", "keep", "regression", "keep"]
    assert knobs_of(repo, repo.attempt_refs()[3] + "^") == {"X": 80}  # built on BEST, not 130
    assert git(repo.root, "rev-parse", f"{repo.ref('best')}~1^").strip() == kept_ledger


def corrupt_note(repo: BenchRepo, attempt: int, text: str = "{not json") -> str:
    sha = repo.attempt_refs()[attempt]
    git(repo.root, "notes", "--ref", "kernelopt", "add", "-f", "-m", text, sha)
    return sha


def test_a_corrupt_note_on_best_is_reported_and_read_from_the_notes_history(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 130, 70])
    cli("run", str(repo.program), "--tag", "t", "--max-candidates", "2", cwd=repo.root)
    sha = corrupt_note(repo, 1)

    status = cli("status", "--json", cwd=repo.root)
    assert json.loads(status.stdout)["best_attempt"] == 1
    assert json.loads(status.stdout)["best_metric"] == 80.0
    assert f"the note of attempt #1 ({sha[:12]}) is not valid JSON" in status.stderr
    log = cli("log", "--json", cwd=repo.root)
    assert [r["verdict"] for r in json.loads(log.stdout)] == ["baseline", "keep", "regression"]
    assert "attempt #1" in log.stderr

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    assert "attempt #1" in result.output and "written back" in result.output
    assert verdicts(repo) == ["baseline", "keep", "regression", "keep"]
    assert repo.notes()[1]["metric"] == 80.0  # the note is whole again
    assert repo.notes()[3]["previous_best"] == 80.0


def test_an_unreadable_note_with_no_history_stops_the_run_naming_the_attempt(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 130, 70])
    cli("run", str(repo.program), "--tag", "t", "--max-candidates", "2", cwd=repo.root)
    sha = corrupt_note(repo, 2, '{"kernelopt": 1, "attempt": 2}')
    # The notes history rewritten: no earlier version of the note is left.
    tree = git(repo.root, "rev-parse", "refs/notes/kernelopt^{tree}").strip()
    orphan = git(repo.root, "commit-tree", tree, "-m", "notes").strip()
    git(repo.root, "update-ref", "refs/notes/kernelopt", orphan)

    status = cli("status", "--json", cwd=repo.root)
    assert f"attempt #2 ({sha[:12]}) has no verdict" in status.stderr
    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 1, result.output
    assert (
        "attempt #2" in result.output
        and f"git notes --ref refs/notes/kernelopt edit {sha}" in result.output
    )
    assert "Traceback" not in result.output
    assert sorted(repo.attempt_refs()) == [0, 1, 2]  # nothing measured, nothing re-measured


def test_an_agent_that_switches_branches_every_round_never_wedges_the_run(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=None)
    agent = (
        'n=$(git rev-list --count HEAD); git checkout -q -b "idea-$n"; '
        'x=$((90 - n)); printf \'{"X": %s}\\n\' "$x" > knobs.json; '
        'git commit -qam "agent: X $x"; echo "X $x" > "$KERNELOPT_HYPOTHESIS_FILE"'
    )

    result = cli(
        "run", str(repo.program), "--tag", "t", "--agent", agent, "--max-candidates", "3",
        cwd=repo.root,
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert "cannot lock ref" not in result.output
    assert verdicts(repo) == ["baseline", "keep", "keep", "keep"]
    assert on_run_branch(repo)
    assert "put it back on kernelopt/x-t" in result.output


@pytest.mark.parametrize(
    "garbage",
    [
        "{not json",
        "[]",
        '{"kernelopt": 1, "attempt": 1, "verdict": "keep", "counters": {"attempts": "x"}}',
        '{"kernelopt": 1, "attempt": 1, "verdict": "keep", "spread": [1, 2]}',
        '{"kernelopt": 1, "attempt": 7, "verdict": "keep"}',
    ],
)
def test_no_bad_note_makes_a_traceback_in_status_or_log(
    bench_repo: RepoFactory, cli: Cli, garbage: str
) -> None:
    repo = bench_repo(space=[100, 80, 130])
    cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    corrupt_note(repo, 1, garbage)

    for command in (["status"], ["log", "--plain"], ["log", "--json"], ["status", "--json"]):
        result = cli(*command, cwd=repo.root)
        assert result.exit_code == 0, (command, result.output)
        assert "attempt #1" in result.stderr, command
