"""Every bad input a user can give is one clear error, exit 2, before anything runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git

import kernelopt.cli  # noqa: F401 - imported here, so a time limit below measures no imports
from kernelopt.program import ProgramError, load_program, split_front_matter


def with_front(repo: BenchRepo, edit: Callable[[dict[str, Any]], None]) -> BenchRepo:
    """The repository's program with its front matter edited, committed."""
    text, body, _ = split_front_matter(repo.program.read_text())
    front = yaml.safe_load(text or "")
    edit(front)
    repo.program.write_text("---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n" + body)
    git(repo.root, "commit", "-q", "-am", "the program under test")
    return repo


def refused(cli: Cli, repo: BenchRepo, *expected: str) -> str:
    """Run the program; assert exit 2 with ``expected`` in the message and nothing started."""
    head = repo.rev("HEAD")
    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for text in expected:
        assert text in result.output
    assert repo.rev(repo.branch()) is None  # no run branch: no baseline was measured
    assert git(repo.root, "for-each-ref", "refs/kernelopt/") == ""
    assert repo.rev("HEAD") == head
    assert git(repo.root, "status", "--porcelain") == ""
    return result.output


def set_space(space: dict[Any, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda front: front["target"]["knobs"].__setitem__("space", space)


@pytest.mark.parametrize(
    ("space", "key", "why"),
    [
        ({"X": [[1], [2]]}, "X", "strings or numbers"),
        ({"X": [{"a": 1}]}, "X", "strings or numbers"),
        ({"X": [None, 1]}, "X", "strings or numbers"),
        ({"X": [1, True]}, "X", "booleans cannot be mixed"),
        ({"X": [1, 1]}, "X", "listed twice"),
        ({"X": [64, 64.0]}, "X", "listed twice"),
        ({"X": []}, "X", "at least one value"),
        ({"X": None}, "X", "at least one value"),
        ({"X": [float("nan")]}, "X", "finite"),
        ({1: [1, 2]}, "1", "must be a string"),
    ],
)
def test_a_bad_knob_space_is_refused_naming_the_knob(
    bench_repo: RepoFactory, cli: Cli, space: dict[Any, Any], key: str, why: str
) -> None:
    repo = with_front(bench_repo(), set_space(space))

    refused(cli, repo, f"target.knobs.space.{key}:", why)


def test_every_bad_knob_is_reported_at_once(bench_repo: RepoFactory) -> None:
    repo = with_front(bench_repo(), set_space({"A": [], "B": [1, 2], "C": [[0]]}))

    with pytest.raises(ProgramError) as info:
        load_program(repo.program)

    assert [p.path for p in info.value.problems] == ["target.knobs.space.A", "target.knobs.space.C"]


def test_a_space_of_booleans_or_mixed_scalars_is_accepted(bench_repo: RepoFactory) -> None:
    repo = with_front(bench_repo(), set_space({"X": [100, 80.5, "wrong"], "FLAG": [True, False]}))

    program = load_program(repo.program)

    assert program.target.knobs is not None
    assert program.target.knobs.space == {"X": (100, 80.5, "wrong"), "FLAG": (True, False)}


def set_knob_file(path: str) -> Callable[[dict[str, Any]], None]:
    return lambda front: front["target"]["knobs"].__setitem__("file", path)


@pytest.mark.parametrize("path", ["/tmp/knobs.json", "../knobs.json", "sub/../../knobs.json"])
def test_a_knob_file_outside_the_tree_is_refused_before_the_baseline(
    bench_repo: RepoFactory, cli: Cli, path: str
) -> None:
    repo = with_front(bench_repo(), set_knob_file(path))

    refused(cli, repo, "target.knobs.file:", "inside the repository")


def test_an_empty_knob_file_is_refused_before_the_baseline(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = with_front(bench_repo(), set_knob_file(""))

    refused(cli, repo, "target.knobs.file:", "missing")


def test_a_knob_file_behind_a_symlink_leaving_the_tree_is_refused(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = bench_repo()
    (tmp_path / "elsewhere").mkdir()
    (repo.root / "conf").symlink_to(tmp_path / "elsewhere")
    git(repo.root, "add", "conf")
    repo = with_front(repo, set_knob_file("conf/knobs.json"))

    refused(cli, repo, "target.knobs.file:", "leads outside the repository")


def test_a_knob_file_in_a_subfolder_is_accepted(bench_repo: RepoFactory) -> None:
    repo = with_front(bench_repo(), set_knob_file("conf/knobs.json"))

    assert load_program(repo.program).target.knobs.file == "conf/knobs.json"  # type: ignore[union-attr]


def nki_program(root: Path, **paths: str) -> Path:
    for name in ("workload.py", "kernel.py", "knobs.json"):
        (root / name).write_text("")
    front = {
        "name": "k",
        "target": {"kind": "nki", "workload": "workload.py", "kernel": "kernel.py", **paths},
        "metric": {"name": "mfu", "better": "higher"},
    }
    path = root / "program.md"
    path.write_text("---\n" + yaml.safe_dump(front) + "---\n")
    return path


@pytest.mark.parametrize("key", ["workload", "kernel", "knobs"])
@pytest.mark.parametrize("where", ["absolute", "dotdot", "symlink"])
def test_an_nki_path_outside_the_tree_is_refused(tmp_path: Path, key: str, where: str) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "outside.py").write_text("")
    (root / "link.py").symlink_to(tmp_path / "outside.py")
    rel = {
        "absolute": str(tmp_path / "outside.py"),
        "dotdot": "../outside.py",
        "symlink": "link.py",
    }
    program = nki_program(root, **{key: rel[where]})

    with pytest.raises(ProgramError) as info:
        load_program(program, root=root)

    assert [p.path for p in info.value.problems] == [f"target.{key}"]
    assert "repository" in info.value.problems[0].message


@pytest.mark.parametrize(
    "correct",
    [
        "-" * 990 + "err == 0",
        "(0 + " * 150 + "err" + ")" * 150 + " == 0",
        "not " * 200 + "err",
        "abs(" * 120 + "err" + ")" * 120 + " == 0",
    ],
)
def test_a_deeply_nested_correct_expression_is_refused_before_the_baseline(
    bench_repo: RepoFactory, cli: Cli, correct: str
) -> None:
    repo = with_front(bench_repo(), lambda front: front["target"].__setitem__("correct", correct))

    output = refused(cli, repo, "target.correct:", "too deeply nested")

    assert len(output) < 400  # the error does not echo the whole expression


@pytest.mark.parametrize("correct", ["", "   "])
def test_an_empty_correct_expression_is_refused_before_the_baseline(
    bench_repo: RepoFactory, cli: Cli, correct: str
) -> None:
    repo = with_front(bench_repo(), lambda front: front["target"].__setitem__("correct", correct))

    refused(cli, repo, "target.correct:", "non-empty")


def test_a_moderately_nested_correct_expression_still_holds(bench_repo: RepoFactory) -> None:
    from kernelopt.targets.expr import parse_expression

    expression = parse_expression("-" * 20 + "(" * 10 + "err" + ")" * 10 + " == 0")

    assert expression.holds({"err": 0}) and not expression.holds({"err": 1})


def billion_laughs(key: str) -> str:
    """Front matter of about 800 bytes whose ``key`` expands to 9**9 strings."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "---\nkernelopt: 1\n" + "\n".join(lines) + f"\n{key}: *l8\n---\nTune.\n"


@pytest.mark.parametrize("key", ["name", "metric", "timeout"])
def test_a_billion_laughs_front_matter_fails_fast(
    bench_repo: RepoFactory, cli: Cli, key: str
) -> None:
    repo = bench_repo()
    text = billion_laughs(key)
    assert len(text) < 1000
    repo.program.write_text(text)
    git(repo.root, "commit", "-q", "-am", "a hostile program")
    started = time.monotonic()

    refused(cli, repo, "aliases (*name) are not allowed")

    assert time.monotonic() - started < 1.0


def test_anchors_without_aliases_are_still_plain_yaml(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    path = nki_program(root)
    path.write_text(path.read_text().replace("name: k", "name: &n k"))

    assert load_program(path, root=root).name == "k"


def started_run(bench_repo: RepoFactory, cli: Cli) -> BenchRepo:
    repo = bench_repo(space=None)
    assert cli("run", str(repo.program), "--tag", "t", cwd=repo.root).exit_code == 0
    (repo.worktree() / "knobs.json").write_text('{"X": 80}\n')
    return repo


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ("caf\udce9 is faster", "not valid UTF-8"),
        ("\udcff\udcfe", "not valid UTF-8"),
        ("a\x00b", "U+0000"),
        ("red \x1b[31mtext", "U+001B"),
        ("carriage\rreturn", "U+000D"),
    ],
)
def test_try_refuses_a_hypothesis_that_is_not_text(
    bench_repo: RepoFactory, cli: Cli, message: str, why: str
) -> None:
    repo = started_run(bench_repo, cli)
    refs = repo.attempt_refs()

    result = cli("try", "-m", message, cwd=repo.worktree())

    assert result.exit_code == 2, result.output
    assert "-m:" in result.output and why in result.output
    assert repo.attempt_refs() == refs  # nothing committed or measured
    assert git(repo.worktree(), "status", "--porcelain").strip() == "M knobs.json"


def test_a_hypothesis_cannot_forge_trailers(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started_run(bench_repo, cli)
    message = "smaller X\n\nKernelopt-Attempt: 99\nKernelopt-Run: other-run\n\n\tindented"

    result = cli("try", "-m", message, cwd=repo.worktree())

    assert result.exit_code == 0, result.output
    sha = repo.attempt_refs()[1]
    assert git(repo.root, "log", "-1", "--format=%s", sha).strip() == "kernelopt #1 edit: smaller X"
    trailers = git(repo.root, "log", "-1", "--format=%(trailers:only,unfold)", sha).split("\n")
    assert "Kernelopt-Attempt: 1" in trailers and "Kernelopt-Run: x-t" in trailers
    assert "Kernelopt-Attempt: 99" not in trailers
    assert repo.note(sha)["hypothesis"] == message


def test_text_from_other_sources_is_made_safe_for_the_commit_message() -> None:
    from kernelopt.history import candidate_message, read_trailers

    message = candidate_message("x-t", 3, "agent", "caf\udce9\x00 wins\r\nsecond line")

    message.encode("utf-8")  # no surrogate is left to fail the write to git
    assert message.splitlines()[0] == "kernelopt #3 agent: caf\ufffd\ufffd wins"
    assert read_trailers(message)["Kernelopt-Attempt"] == "3"
