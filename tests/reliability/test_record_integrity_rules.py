"""The tuning record cannot be bent: the user's checkout, the measured tree,
the rules of the run and its stop hold whatever an agent, a user or a stray
process does in the worktree (docs/reliability.md)."""

from __future__ import annotations

import json
import time
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


def test_a_time_budget_used_up_between_tries_stops_the_next_one_cleanly(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli, stop={"max_hours": 0.0002})  # 0.72 s
    time.sleep(1.0)
    ledger = repo.worktree() / "performance.md"
    ledger.write_text(ledger.read_text() + "| 9 | forged | keep |\n")

    code, data = try_x(cli, repo, 70)

    assert code == 20 and data["stop"] is True and "time budget used" in data["stop_reason"]
    assert list(repo.attempt_refs()) == [0]
    assert "### Stop Summary" in repo.ledger() and "forged" not in repo.ledger()
    # The agent's own edit is neither committed nor lost.
    assert json.loads((repo.worktree() / "knobs.json").read_text()) == {"X": 70}
    assert cli.json("status", cwd=repo.root)["stopped"] is True


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


# -- fixed paths: the rules are not the candidate's -----------------------------------------


def try_edit(cli: Cli, repo: BenchRepo, files: dict[str, str], x: Any = None) -> tuple[int, Any]:
    wt = repo.worktree()
    for rel, text in files.items():
        (wt / rel).write_text(text)
    if x is not None:
        (wt / "knobs.json").write_text(json.dumps({"X": x}, indent=2) + "\n")
    result = cli("try", "-m", "an edit", "--json", cwd=wt)
    return result.exit_code, json.loads(result.stdout)


def assert_refused(repo: BenchRepo, code: int, data: dict[str, Any], *paths: str) -> None:
    assert code == 16, data
    assert data["verdict"] == "refused"
    for path in paths:
        assert path in data["error"]
    note = repo.note(data["commit"])
    assert note["verdict"] == "refused" and note["measurement"]["status"] == "refused"
    assert note["samples"] == [] or all(s.get("candidate") is None for s in note["samples"])


def test_a_program_flipped_in_the_worktree_is_refused_not_obeyed(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    best = repo.rev(repo.ref("best"))
    program = (repo.worktree() / "programs" / "x.md").read_text()
    flipped = program.replace("better: lower", "better: higher")
    assert flipped != program

    code, data = try_edit(cli, repo, {"programs/x.md": flipped}, x=500)  # 5x slower

    assert_refused(repo, code, data, "programs/x.md")
    assert repo.rev(repo.ref("best")) == best
    # The rest of the change is back to try again; the program is BEST's.
    assert data["worktree"] == "change kept without fixed paths"
    assert git(repo.worktree(), "status", "--porcelain").split() == ["M", "knobs.json"]
    assert "better: lower" in (repo.worktree() / "programs" / "x.md").read_text()
    # The refused attempt is on record, reachable, and its reason is in the log.
    log = cli.json("log", cwd=repo.root)
    assert log[-1]["verdict"] == "refused" and "programs/x.md" in log[-1]["error"]


def test_the_program_is_read_from_the_runs_start_not_the_worktree(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    wt = repo.worktree()
    path = wt / "programs" / "x.md"
    path.write_text(path.read_text().replace("better: lower", "better: higher"))
    git(wt, "commit", "-qam", "the agent commits its own rules")  # then a 5x slower kernel
    best = repo.rev(repo.ref("best"))

    code, data = try_edit(cli, repo, {}, x=500)

    assert code != 0 and data["verdict"] != "keep"
    assert repo.rev(repo.ref("best")) == best
    assert repo.notes()[0]["metric"] == 100.0
    from kernelopt.session import program_for_run

    assert program_for_run(repo.root, repo.run_id()).better == "lower"


def test_a_forged_ledger_row_is_refused(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)
    ledger = repo.ledger()
    forged = ledger + "| 99 | `deadbeef00` | keep | time 1 | +99.00% | forged |\n"

    code, data = try_edit(cli, repo, {"performance.md": forged}, x=90)

    assert_refused(repo, code, data, "performance.md")
    assert repo.ledger() == ledger
    assert "forged" not in (repo.worktree() / "performance.md").read_text()
    # Without the forged row, the rest of the change is measured on its own.
    code, data = cli.json("try", "-m", "X 90 alone", cwd=repo.worktree()), None
    assert code["verdict"] == "keep" and code["files"] == ["knobs.json"]


def test_the_benchmark_script_is_fixed_unless_the_program_says_otherwise(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    fixed = started(bench_repo, cli)
    script = (fixed.worktree() / "bench.py").read_text()
    gamed = script + "\n# report whatever the agent likes\n"

    code, data = try_edit(cli, fixed, {"bench.py": gamed})

    assert_refused(fixed, code, data, "bench.py")
    # A program that lists its own fixed paths: bench.py is the candidate's to change.
    open_bench = bench_repo(space=None, fixed=["*.cfg"])
    result = cli("run", str(open_bench.program), "--tag", "t", cwd=open_bench.root)
    assert result.exit_code == 0, result.output + result.stderr
    code, data = try_edit(cli, open_bench, {"bench.py": gamed})
    assert data["verdict"] == "tie", data
    code, data = try_edit(cli, open_bench, {"tuning.cfg": "x\n"})
    assert_refused(open_bench, code, data, "tuning.cfg")


def test_a_refused_candidate_in_run_is_recorded_and_the_run_goes_on(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80])
    # A knob space whose file is fixed: every knob candidate changes a fixed path.
    text = repo.program.read_text().replace("correct:", "fixed: [knobs.json]\n  correct:")
    repo.program.write_text(text)
    git(repo.root, "commit", "-qam", "fix the knob file")

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output + result.stderr
    notes = repo.notes()
    assert [n["verdict"] for n in notes.values()] == ["baseline", "refused"]
    assert "knobs.json" in notes[1]["error"]
    assert "REFUSED" in result.output


def test_a_restarted_run_with_a_changed_program_warns_and_keeps_its_rules(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 90])
    first = cli("run", str(repo.program), "--tag", "t", "--max-candidates", "1", cwd=repo.root)
    assert first.exit_code == 0
    text = repo.program.read_text().replace("better: lower", "better: higher")
    repo.program.write_text(text)
    git(repo.root, "commit", "-qam", "the user flips the metric on their branch")

    again = cli("run", str(repo.program), "--tag", "t", "--max-candidates", "1", cwd=repo.root)

    assert again.exit_code == 0, again.output + again.stderr
    assert "warning" in again.stderr and "metric.better: lower -> higher" in again.stderr
    # X 90 after BEST 80 is slower: a regression under the run's own rules.
    assert [n["verdict"] for n in repo.notes().values()] == ["baseline", "keep", "regression"]


def test_an_uncommitted_program_edit_is_named_and_not_used(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80, 70], stop={"max_candidates": 5})
    text = repo.program.read_text()
    repo.program.write_text(text.replace("max_candidates: 5", "max_candidates: 1"))

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output + result.stderr
    assert "stop.max_candidates: 5 -> 1" in result.stderr
    assert [n["verdict"] for n in repo.notes().values()] == ["baseline", "keep", "keep"]


# -- a measurement is of a commit, never of a folder ----------------------------------------

# A benchmark whose time is X, and which plays a stray editor once: when it measures
# X == when, it writes ``text`` to ``path`` (the run's worktree) while it runs.
EDITING_BENCH = """
import json, os, pathlib
x = json.load(open("knobs.json"))["X"]
edit = json.loads(os.environ.get("EDIT_WHILE_MEASURING") or "{}")
if edit and x == edit["when"] and pathlib.Path(edit["flag"]).exists():
    pathlib.Path(edit["flag"]).unlink()
    pathlib.Path(edit["path"]).write_text(edit["text"])
print(f"time: {x}")
print("err: 0")
"""


def editing_repo(bench_repo: RepoFactory, **program: Any) -> BenchRepo:
    repo = bench_repo(1000, results="stdout", **program)
    (repo.root / "bench.py").write_text(EDITING_BENCH)
    git(repo.root, "commit", "-qam", "a benchmark that edits the worktree once")
    return repo


def edit_while_measuring(
    monkeypatch: Any, tmp_path: Path, when: int, path: Path, text: str
) -> Path:
    flag = tmp_path / "edit-once"
    flag.touch()
    spec = {"when": when, "path": str(path), "text": text, "flag": str(flag)}
    monkeypatch.setenv("EDIT_WHILE_MEASURING", json.dumps(spec))
    return flag


def test_an_edit_made_while_try_measures_is_not_measured_and_stays(
    bench_repo: RepoFactory, cli: Cli, monkeypatch: Any, tmp_path: Path
) -> None:
    repo = editing_repo(bench_repo, space=None)
    assert cli("run", str(repo.program), "--tag", "t", cwd=repo.root).exit_code == 0
    knobs = repo.worktree() / "knobs.json"
    flag = edit_while_measuring(monkeypatch, tmp_path, 900, knobs, '{"X": 200}\n')

    code, data = try_x(cli, repo, 900, "a real 10% win")

    assert not flag.exists()  # the stray edit did happen, mid-measurement
    note = repo.note(data["commit"])
    assert code == 0 and data["verdict"] == "keep"
    assert data["metric"] == 900.0 and data["gain"] == 0.1
    assert {s["candidate"] for s in note["samples"]} == {900.0}
    assert json.loads(git(repo.root, "show", f"{repo.branch()}:knobs.json")) == {"X": 900}
    # The edit is neither measured nor lost: it is back in the worktree for the next try.
    assert json.loads(knobs.read_text()) == {"X": 200}
    assert data["edits"] and data["edits"][0]["restored"] is True
    assert repo.rev(data["edits"][0]["ref"]) is not None


def test_an_edit_made_while_run_measures_is_saved_and_named(
    bench_repo: RepoFactory, cli: Cli, monkeypatch: Any, tmp_path: Path
) -> None:
    repo = editing_repo(bench_repo, space=[1000, 900])
    idea = repo.worktree() / "idea.txt"
    edit_while_measuring(monkeypatch, tmp_path, 900, idea, "someone's idea\n")

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output + result.stderr
    notes = repo.notes()
    assert [n["verdict"] for n in notes.values()] == ["baseline", "keep"]
    assert {s["candidate"] for s in notes[1]["samples"]} == {900.0}
    assert "idea.txt" not in notes[1]["files"]
    assert "idea.txt" not in git(repo.root, "ls-tree", "-r", "--name-only", repo.branch())
    saved = repo.ref("edits/1")
    assert git(repo.root, "show", f"{saved}:idea.txt") == "someone's idea\n"
    assert saved in result.stderr
    assert not idea.exists()  # not folded into the next candidate either


def test_try_program_must_be_the_runs_own_program(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)
    other = repo.worktree() / "mine.md"
    other.write_text(repo.program.read_text().replace("better: lower", "better: higher"))
    (repo.worktree() / "knobs.json").write_text('{"X": 500}\n')

    result = cli("try", "-m", "x", "--program", str(other), cwd=repo.worktree())

    assert result.exit_code == 2, result.output + result.stderr
    assert "programs/x.md" in result.stderr and "start commit" in result.stderr
    assert list(repo.attempt_refs()) == [0]


def test_fixed_paths_must_stay_inside_the_repository(tmp_path: Path) -> None:
    from benchmarks_support.gitrepo import make_repo, program_text

    from kernelopt.program import ProgramError, load_program

    root = make_repo(tmp_path / "repo")
    (root / "bench.py").write_text("print('time: 1')\n")
    path = root / "p.md"
    path.write_text(program_text(fixed=["/etc/passwd", "../up", "ok/*.py"]))

    try:
        load_program(path)
    except ProgramError as exc:
        text = str(exc)
    else:
        raise AssertionError("a fixed path outside the repository was accepted")
    assert "target.fixed[0]" in text and "target.fixed[1]" in text
    assert "target.fixed[2]" not in text


def test_the_default_fixed_paths_are_what_measures_not_what_is_tuned(tmp_path: Path) -> None:
    from dataclasses import replace

    from benchmarks_support.gitrepo import build_bench_repo

    from kernelopt.program import load_program
    from kernelopt.rules import breaking, fixed_paths
    from kernelopt.worktrees import changed_paths

    repo = build_bench_repo(tmp_path / "repo", space=[1, 2])
    program = load_program(repo.program)
    target = replace(program.target, command="/usr/bin/python3 -S bench.py knobs.json --out r")
    program = replace(program, target=target)
    in_repo = {"bench.py", "knobs.json", "programs/x.md"}

    fixed = fixed_paths(program, "programs/x.md", lambda paths: set(paths) & in_repo)

    assert set(fixed) == {"programs/x.md", "performance.md", "bench.py", "results/out.csv"}
    assert breaking(["knobs.json", "bench.py", "programs/x.md"], fixed) == [
        "bench.py",
        "programs/x.md",
    ]
    assert breaking(["h/a.py", "h/b/c.txt", "x.py"], ("h/b", "*.py")) == [
        "h/a.py",
        "h/b/c.txt",
        "x.py",
    ]
    # A fixed file moved away is a change of that file too.
    old = "100644 blob aaa\tprograms/x.md\n100644 blob bbb\tbench.py\n"
    new = "100644 blob aaa\tprograms/y.md\n100644 blob bbb\tbench.py\n"
    assert changed_paths(old, new) == ("programs/x.md", "programs/y.md")


def test_an_agent_that_edits_the_benchmark_is_refused_and_told_why(
    bench_repo: RepoFactory, cli: Cli, monkeypatch: Any, tmp_path: Path
) -> None:
    repo = bench_repo(space=None)
    agent = Path(__file__).parents[1] / "agents" / "scripted_agent.py"
    plan = [
        {
            "edit": {"bench.py": "print('time: 1')\nprint('err: 0')\n"},
            "hypothesis": "a faster bench",
        },
        {"edit": {"knobs.json": '{"X": 80}\n'}, "hypothesis": "a smaller X"},
    ]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    monkeypatch.setenv("SCRIPTED_AGENT_PLAN", str(tmp_path / "plan.json"))
    monkeypatch.setenv("SCRIPTED_AGENT_LOG", str(tmp_path / "agent.log"))

    result = cli(
        "run",
        str(repo.program),
        "--tag",
        "t",
        "--max-candidates",
        "2",
        "--agent",
        f"python3 {agent}",
        cwd=repo.root,
    )

    assert result.exit_code == 0, result.output + result.stderr
    notes = repo.notes()
    assert [n["verdict"] for n in notes.values()] == ["baseline", "refused", "keep"]
    assert notes[2]["metric"] == 80.0 and notes[2]["files"] == ["knobs.json"]
    lessons = cli.json("log", "--lessons", cwd=repo.root)
    assert lessons["refused"][0]["hypothesis"] == "a faster bench"
    assert "bench.py" in lessons["refused"][0]["why"]
