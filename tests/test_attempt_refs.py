"""An attempt's commit moves its attempt ref and the run branch together, from
wherever the branch is: at BEST, or on a commit an agent made on the branch."""

from __future__ import annotations

from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git

from kernelopt.history import RunRepo


def _started(bench_repo: RepoFactory, cli: Cli) -> BenchRepo:
    repo = bench_repo(space=None)
    assert cli("run", str(repo.program), "--tag", "t", cwd=repo.root).exit_code == 0
    return repo


def test_an_attempt_moves_its_ref_and_the_branch_from_best(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = _started(bench_repo, cli)
    run = RunRepo(repo.root, repo.run_id())
    best = repo.rev(repo.ref("best"))
    (repo.worktree() / "knobs.json").write_text('{"X": 80}\n')

    sha = run.commit_attempt(1, "edit", "smaller X", parent=best)

    assert sha is not None
    assert repo.rev(f"refs/heads/{run.branch}") == sha == repo.rev(repo.ref("attempts/1"))
    assert git(repo.root, "rev-parse", f"{sha}^").strip() == best


def test_an_attempt_moves_the_branch_from_an_agents_own_commit(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = _started(bench_repo, cli)
    run = RunRepo(repo.root, repo.run_id())
    best = repo.rev(repo.ref("best"))
    (repo.worktree() / "knobs.json").write_text('{"X": 70}\n')
    git(repo.worktree(), "commit", "-qam", "the agent commits its own change")
    (repo.worktree() / "knobs.json").write_text('{"X": 60}\n')

    sha = run.commit_attempt(1, "edit", "X 60", parent=best)

    assert sha is not None
    assert repo.rev(f"refs/heads/{run.branch}") == sha == repo.rev(repo.ref("attempts/1"))
    assert git(repo.root, "rev-parse", f"{sha}^").strip() == best
    assert git(repo.root, "show", f"{sha}:knobs.json") == '{"X": 60}\n'
