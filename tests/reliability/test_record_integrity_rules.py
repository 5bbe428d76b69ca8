"""The tuning record cannot be bent: the user's checkout, the measured tree,
the rules of the run and its stop hold whatever an agent, a user or a stray
process does in the worktree (docs/reliability.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git


def started(bench_repo: RepoFactory, cli: Cli, **program: Any) -> BenchRepo:
    """A run with its baseline measured and no candidates yet."""
    repo = bench_repo(**{"space": None, **program})
    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    assert result.exit_code == 0, result.output + result.stderr
    return repo


def try_x(cli: Cli, repo: BenchRepo, x: Any, message: str = "") -> tuple[int, dict[str, Any]]:
    (repo.worktree() / "knobs.json").write_text(json.dumps({"X": x}, indent=2) + "\n")
    result = cli("try", "-m", message or f"X = {x}", "--json", cwd=repo.worktree())
    return result.exit_code, json.loads(result.stdout)


def refs_and_notes(repo: BenchRepo) -> tuple[dict[int, str], str | None, str]:
    return repo.attempt_refs(), repo.rev(repo.ref("best")), repo.ledger()


# -- one stop rule for every verb ------------------------------------------------------


def test_try_after_the_candidate_budget_exits_20_before_committing(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli, stop={"max_candidates": 2})

    first = try_x(cli, repo, 90)
    second = try_x(cli, repo, 80)
    before = refs_and_notes(repo)
    code, data = try_x(cli, repo, 70)

    assert first[0] == 0 and first[1]["stop"] is False
    assert second[0] == 20 and second[1]["stop"] is True
    assert "candidate budget used: 2 of 2" in second[1]["stop_reason"]
    assert code == 20 and data["stop"] is True and data["verdict"] is None
    assert "candidate budget used" in data["stop_reason"]
    assert refs_and_notes(repo) == before  # nothing committed, measured or noted
    assert list(repo.attempt_refs()) == [0, 1, 2]
    status = cli.json("status", cwd=repo.root)
    assert status["stopped"] is True and "candidate budget used" in status["stop_reason"]
    assert "### Stop Summary" in repo.ledger()


def test_a_target_reached_by_run_is_stopped_everywhere(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 130, 80, 70], stop={"target": 80})

    out = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert out.exit_code == 0, out.output + out.stderr
    assert "target reached: time 80" in out.output
    status = cli.json("status", cwd=repo.root)
    assert status["stopped"] is True
    assert status["stop_reason"].startswith("target reached: time 80")
    text = cli("status", cwd=repo.root).output
    assert "stopped: target reached" in text
    ledger = repo.ledger()
    assert "### Stop Summary" in ledger and "- reason: target reached" in ledger
    # A later try and a later run start nothing.
    attempts = repo.attempt_refs()
    code, data = try_x(cli, repo, 60)
    assert code == 20 and data["stop"] is True
    again = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    assert "already stopped: target reached" in again.output
    assert repo.attempt_refs() == attempts


def test_the_report_says_stopped_with_the_reason(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = bench_repo(space=[100, 80], stop={"target": 90})
    cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    result = cli("report", repo.run_id(), "--out", str(tmp_path / "r"), cwd=repo.root)

    assert result.exit_code == 0, result.output + result.stderr
    page = (tmp_path / "r" / "index.html").read_text()
    assert ">stopped<" in page and ">open<" not in page
    assert "target reached" in page


# -- the user's checkout is never written --------------------------------------------------


def checkout_state(root: Path) -> tuple[str, str, str, str, str]:
    """Everything a run could change in the user's checkout: HEAD, branch, index, files, refs."""
    return (
        git(root, "rev-parse", "HEAD"),
        git(root, "symbolic-ref", "HEAD"),
        git(root, "ls-files", "--stage"),
        git(root, "status", "--porcelain", "--untracked-files=all"),
        git(root, "for-each-ref"),
    )


def test_run_refuses_the_users_checkout_as_its_worktree(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80])
    (repo.root / "knobs.json").write_text('{"X": "fail"}\n')  # uncommitted work of the user
    (repo.root / "idea.txt").write_text("mine\n")
    git(repo.root, "add", "idea.txt")
    before = checkout_state(repo.root)

    for where in (".", str(repo.root), "programs/.."):
        result = cli("run", str(repo.program), "--tag", "t", "--worktree", where, cwd=repo.root)

        assert result.exit_code == 2, result.output + result.stderr
        assert "--worktree" in result.stderr and "your checkout" in result.stderr
        assert "Traceback" not in result.output + result.stderr
        assert checkout_state(repo.root) == before
    assert (repo.root / "knobs.json").read_text() == '{"X": "fail"}\n'


def test_run_refuses_a_worktree_it_did_not_create(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = bench_repo(space=[100, 80])
    other = tmp_path / "users-other-worktree"
    git(repo.root, "worktree", "add", "-q", "-b", "feature", str(other))
    folder = tmp_path / "some-folder"
    folder.mkdir()
    (folder / "keep.txt").write_text("not kernelopt's\n")
    inside = repo.root / "wt"
    before = checkout_state(repo.root)

    for where in (other, folder, inside):
        result = cli(
            "run", str(repo.program), "--tag", "t", "--worktree", str(where), cwd=repo.root
        )

        assert result.exit_code == 2, (where, result.output, result.stderr)
        assert "--worktree" in result.stderr
    assert checkout_state(repo.root) == before
    assert git(other, "status", "--porcelain") == ""
    assert git(other, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"
    assert (folder / "keep.txt").read_text() == "not kernelopt's\n"
    assert not inside.exists()


def test_a_new_folder_becomes_the_runs_worktree_and_is_its_own_afterwards(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = bench_repo(space=[100, 80, 70])
    where = tmp_path / "wt"
    before = checkout_state(repo.root)

    first = cli(
        "run",
        str(repo.program),
        "--tag",
        "t",
        "--worktree",
        str(where),
        "--max-candidates",
        "1",
        cwd=repo.root,
    )
    again = cli(
        "run",
        str(repo.program),
        "--tag",
        "t",
        "--worktree",
        str(where),
        "--max-candidates",
        "1",
        cwd=repo.root,
    )
    other_run = cli("run", str(repo.program), "--tag", "u", "--worktree", str(where), cwd=repo.root)

    assert first.exit_code == 0, first.output + first.stderr
    assert again.exit_code == 0, again.output + again.stderr
    assert [n["verdict"] for n in repo.notes().values()] == ["baseline", "keep", "keep"]
    assert git(where, "rev-parse", "HEAD").strip() == repo.rev(repo.ref("best"))
    assert other_run.exit_code == 2 and "--worktree" in other_run.stderr
    # try from inside that worktree finds the run and works there.
    (where / "knobs.json").write_text('{\n  "X": 60\n}\n')
    result = cli("try", "-m", "smaller", "--json", cwd=where)
    assert result.exit_code == 0, result.output + result.stderr
    assert json.loads(result.stdout)["verdict"] == "keep"
    assert checkout_state(repo.root)[:4] == before[:4]
