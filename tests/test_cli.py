"""The agent's verbs: `try` in a run's worktree, `status`, `log`, `init`, dedup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git, make_repo
from click.testing import CliRunner

from kernelopt.cli import main
from kernelopt.history import RunRepo
from kernelopt.program import load_program

TRY_FIELDS = {
    "verdict",
    "attempt",
    "commit",
    "metric",
    "best_metric",
    "gain",
    "consecutive_regressions",
    "stop",
}


def started(bench_repo: RepoFactory, cli: Cli, **program: Any) -> BenchRepo:
    """A run with its baseline measured and no candidates yet."""
    repo = bench_repo(**{"space": None, **program})
    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    assert result.exit_code == 0, result.output
    return repo


def try_x(cli: Cli, repo: BenchRepo, x: Any, message: str = "") -> tuple[int, dict[str, Any]]:
    # Written as the knob proposer renders it, so equal knobs give equal trees.
    (repo.worktree() / "knobs.json").write_text(json.dumps({"X": x}, indent=2) + "\n")
    result = cli("try", "-m", message or f"X = {x}", "--json", cwd=repo.worktree())
    return result.exit_code, json.loads(result.stdout)


def test_try_reports_a_keep_as_json_and_exit_0(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)

    code, data = try_x(cli, repo, 80, "a smaller X is faster")

    assert code == 0
    assert TRY_FIELDS <= set(data)
    assert data["verdict"] == "keep"
    assert data["attempt"] == 1
    assert data["commit"] == repo.attempt_refs()[1]
    assert data["metric"] == 80.0 and data["best_metric"] == 80.0
    assert data["gain"] == pytest.approx(0.2)
    assert data["consecutive_regressions"] == 0 and data["stop"] is False
    subject = git(repo.root, "log", "-1", "--format=%s", data["commit"]).strip()
    assert subject == "kernelopt #1 edit: a smaller X is faster"
    assert repo.note(data["commit"])["kind"] == "edit"


@pytest.mark.parametrize(
    ("x", "verdict", "code"),
    [
        (100.1, "tie", 10),
        (130, "regression", 11),
        ("wrong", "incorrect", 12),
        ("fail", "failed", 13),
    ],
)
def test_try_exit_codes_per_verdict(
    bench_repo: RepoFactory, cli: Cli, x: Any, verdict: str, code: int
) -> None:
    repo = started(bench_repo, cli)
    best = repo.rev(repo.ref("best"))

    got, data = try_x(cli, repo, x)

    assert (got, data["verdict"]) == (code, verdict)
    assert data["best_metric"] == 100.0
    # Discarded: the branch is back at BEST; the edit is gone, except an incorrect
    # one, which stays uncommitted in the worktree to repair.
    assert repo.rev(repo.branch()) == best
    left = json.loads((repo.worktree() / "knobs.json").read_text())
    assert left == ({"X": x} if verdict == "incorrect" else {"X": 100})
    assert data["worktree"] == (
        "change kept to repair" if verdict == "incorrect" else "reverted to BEST"
    )


def test_try_diverged_names_the_classes(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli, classes=True)

    code, data = try_x(cli, repo, "split:70:140")

    assert code == 14
    assert data["verdict"] == "diverged"
    assert data["improved"] == ["cls=a"] and data["regressed"] == ["cls=b"]


def test_try_counts_regressions_until_the_run_stops(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli, decide={"max_consecutive_regressions": 2})

    first = try_x(cli, repo, 130)
    second = try_x(cli, repo, 140)
    third = try_x(cli, repo, 80)

    assert first[0] == 11 and first[1]["consecutive_regressions"] == 1
    assert first[1]["stop"] is False
    assert second[0] == 20
    assert second[1]["consecutive_regressions"] == 2 and second[1]["stop"] is True
    assert "2 consecutive" in second[1]["stop_reason"]
    assert third[0] == 20 and third[1]["verdict"] is None and third[1]["stop"] is True
    assert list(repo.attempt_refs()) == [0, 1, 2]


def test_try_without_a_change_is_a_usage_error_not_an_attempt(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    before = repo.attempt_refs()

    result = cli("try", "-m", "nothing", "--json", cwd=repo.worktree())

    assert result.exit_code == 2
    assert "nothing to try" in result.stderr
    assert repo.attempt_refs() == before  # no attempt number burnt


def test_an_incorrect_change_stays_in_the_worktree_to_repair(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    (repo.worktree() / "notes.txt").write_text("an idea\n")

    code, data = try_x(cli, repo, "wrong", "a wrong but promising idea")

    assert code == 12 and data["verdict"] == "incorrect"
    assert data["worktree"] == "change kept to repair"
    wt = repo.worktree()
    # BEST is committed; the change is back as an uncommitted edit, new files included.
    assert git(wt, "rev-parse", "HEAD").strip() == repo.rev(repo.ref("best"))
    assert json.loads((wt / "knobs.json").read_text()) == {"X": "wrong"}
    assert (wt / "notes.txt").read_text() == "an idea\n"
    # The repair is the next try, and it is measured as a change against BEST.
    code, data = try_x(cli, repo, 80, "the same idea, numerics fixed")
    assert code == 0 and data["verdict"] == "keep"
    assert "notes.txt" in data["files"]


def test_try_outside_a_run_worktree_is_a_usage_error(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)

    result = cli("try", "-m", "x", cwd=repo.root)

    assert result.exit_code == 2
    assert "not a kernelopt run worktree" in result.stderr


def test_same_tree_twice_reuses_the_result(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)

    _, first = try_x(cli, repo, 130)
    _, second = try_x(cli, repo, 130, "the same thing again")

    assert first["reused_from"] is None
    assert second["reused_from"] == 1
    assert second["verdict"] == "regression" and second["metric"] == 130.0
    note = repo.note(second["commit"])
    assert (
        note["reused_from"] == 1
        and note["content_key"] == repo.note(first["commit"])["content_key"]
    )
    assert "timings" not in note or note["timings"]["measure_s"] == 0


def test_remeasure_measures_the_same_tree_again(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 130])
    cli("run", str(repo.program), "--tag", "t", "--max-candidates", "1", cwd=repo.root)
    # A second run over the same space re-proposes nothing; a candidate with the
    # regression's tree comes from the agent instead.
    _, again = try_x(cli, repo, 130)
    assert again["reused_from"] == 1

    from kernelopt.session import Session

    session = Session.attach(load_program(repo.program), repo.root, repo.run_id(), remeasure=True)
    session.runner.open(agent_mode=True)
    (repo.worktree() / "knobs.json").write_text('{\n  "X": 130\n}\n')
    result = session.runner.try_worktree("measure it once more")

    assert result.reused_from is None
    assert result.verdict == "regression"
    assert len(repo.note(result.commit)["samples"]) >= 2


def test_status_json_fields(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)
    try_x(cli, repo, 80)
    try_x(cli, repo, 130, "too big")

    data = cli.json("status", cwd=repo.root)

    assert data["worktree"] == str(repo.worktree())
    assert data["branch"] == repo.branch()
    # One BEST id: the best ref (the branch's commit at BEST); best_attempt is what was measured.
    assert data["best_commit"] == repo.rev(repo.ref("best")) and data["best_attempt"] == 1
    assert "ledger_commit" not in data
    assert data["best_metric"] == 80.0 and data["baseline_metric"] == 100.0
    assert data["attempts"] == 2
    assert data["consecutive_regressions"] == 1
    [recent] = data["recent_regressions"]
    assert recent["attempt"] == 2 and recent["hypothesis"] == "too big"
    assert data["stopped"] is False
    # The same answer from inside the worktree, where an agent asks.
    assert cli.json("status", cwd=repo.worktree()) == data


def test_log_json_lists_every_attempt(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)
    try_x(cli, repo, 80)
    try_x(cli, repo, "fail")

    rows = cli.json("log", cwd=repo.root)

    assert [(r["attempt"], r["verdict"]) for r in rows] == [
        (0, "baseline"),
        (1, "keep"),
        (2, "failed"),
    ]
    assert [r["commit"] for r in rows] == list(repo.attempt_refs().values())
    assert rows[1]["gain"] == pytest.approx(0.2) and rows[1]["best_metric"] == 80.0
    assert "exited with status 1" in rows[2]["error"]
    text = cli("log", cwd=repo.root).output
    assert "keep" in text and "failed" in text and "X = fail" in text


def test_status_without_runs_is_a_usage_error(tmp_path: Path, cli: Cli) -> None:
    root = make_repo(tmp_path / "empty")

    result = cli("status", cwd=root)

    assert result.exit_code == 2 and "no kernelopt runs" in result.stderr


def test_init_scaffolds_a_program_that_validates(tmp_path: Path, cli: Cli) -> None:
    root = make_repo(tmp_path / "new")

    result = cli("init", "--name", "blur", cwd=root)

    assert result.exit_code == 0
    assert (root / "performance.md").is_file() and (root / "ir" / "blur").is_dir()
    program = load_program(root / "programs" / "blur.md")
    assert program.name == "blur" and program.target.kind == "command"
    assert "kernelopt try" in program.body
    again = cli("init", "--name", "blur", cwd=root)
    assert "kept    programs/blur.md" in again.output


def _commands(group: click.Group, prefix: str = "kernelopt") -> list[tuple[str, click.Command]]:
    """Every command and subcommand under ``group``, the groups themselves included."""
    found: list[tuple[str, click.Command]] = [(prefix, group)]
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _commands(command, f"{prefix} {name}")
        else:
            found.append((f"{prefix} {name}", command))
    return found


def test_the_walk_reaches_nested_subcommands() -> None:
    names = {name for name, _ in _commands(main)}
    assert {"kernelopt run", "kernelopt ir render", "kernelopt fake-trn2 env"} <= names


@pytest.mark.parametrize("name,command", _commands(main), ids=lambda v: str(v))
def test_every_command_has_help_with_an_example(name: str, command: click.Command) -> None:
    assert command.help and "Example" in command.help, f"{name} --help has no example"
    result = CliRunner().invoke(main, [*name.split()[1:], "--help"])
    assert result.exit_code == 0 and "Example" in result.output


def test_try_after_a_killed_try_measures_it_as_committed(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)
    # A `kernelopt try` killed after committing attempt 1, before measuring it.
    (repo.worktree() / "knobs.json").write_text('{"X": 90}\n')
    pending = RunRepo(repo.root, repo.run_id()).commit_attempt(1, "edit", "X = 90")
    assert pending is not None

    code, data = try_x(cli, repo, 80)

    assert code == 0 and data["attempt"] == 2 and data["verdict"] == "keep"
    note = repo.note(pending)  # as `run` resolves it: measured, never folded into #2
    assert note["verdict"] == "keep" and note["attempt"] == 1 and note["metric"] == 90.0
    assert list(repo.attempt_refs()) == [0, 1, 2]
    assert repo.note(repo.attempt_refs()[2])["previous_best"] == 90.0


def test_run_json_prints_one_object_per_attempt_then_a_summary(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 130])

    result = cli("run", str(repo.program), "--tag", "t", "--json", cwd=repo.root)

    assert result.exit_code == 0
    events = [json.loads(line) for line in result.stdout.splitlines()]
    attempts = [e for e in events if e["event"] == "attempt"]
    assert [(e["attempt"], e["verdict"]) for e in attempts] == [
        (0, "baseline"),
        (1, "keep"),
        (2, "regression"),
    ]
    summary = events[-1]
    assert summary["event"] == "summary"
    assert summary["best_metric"] == 80.0 and summary["baseline_metric"] == 100.0
    assert summary["attempts"] == 2 and summary["kept"] == 1
    assert summary["best_commit"] == repo.rev(repo.ref("best")) and summary["best_attempt"] == 1


def test_cli_status_and_stop_summary_name_one_best(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80, 130], decide={"max_consecutive_regressions": 1})

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    best = repo.rev(repo.ref("best"))
    assert f"BEST {best[:10]}, attempt #1" in result.output
    assert cli.json("status", cwd=repo.root)["best_commit"] == best
    # The stop note names the best ref too; the Stop Summary, written inside the stop
    # commit, names the kept commit under it (the same tree but performance.md).
    assert repo.note(best)["best_commit"] == best
    assert f"BEST_COMMIT: `{repo.rev(best + '^')[:10]}`" in repo.ledger()
    assert "start a new one with a new tag" in result.output
