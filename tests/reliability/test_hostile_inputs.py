"""Generated hostile input through the real CLI, in process, on real git repositories.

Whatever a user gives `kernelopt run` / `try` / `status` / `log` (programs with
valid or broken front matter, knob spaces, tags, hypotheses with odd unicode or
undecodable bytes, benchmarks that report junk, NaN, negative or huge numbers),
kernelopt answers with a documented exit code and never a traceback, leaves
the user's checkout as it was, keeps the repository sound (`git fsck`), and
records every attempt with exactly one note.

Examples per run (database off, so every run draws fresh ones): 100 generated
programs, each run, then `status` and `log`; and 100 generated `try` calls on one
started run, each with a generated knob value and hypothesis: 200 in all, about 40 s.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from benchmarks_support.gitrepo import BenchRepo, build_bench_repo, git, make_repo, program_text
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelopt.cli import main

DOCUMENTED_EXITS = {0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 20, 130}
SETTINGS = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text a YAML file can hold (it is written as UTF-8), and text argv can carry:
# undecodable bytes reach Python as surrogate escapes.
file_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
argv_text = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=24).map(lambda b: b.decode("utf-8", "surrogateescape")),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(),
    file_text,
    st.sampled_from(["wrong", "fail", "split:1:2", "80", "x"]),
)
knob_values = st.one_of(
    scalars,
    st.lists(st.one_of(scalars, st.lists(scalars, max_size=2)), max_size=4),
    st.dictionaries(file_text, scalars, max_size=2),
)
knob_spaces = st.one_of(
    st.dictionaries(st.one_of(file_text, st.integers()), knob_values, max_size=3),
    st.lists(st.integers(1, 200), min_size=1, max_size=3, unique=True).map(lambda v: {"X": v}),
    scalars,
)
tags = st.one_of(st.sampled_from(["t", "a.b", "x..y", "a.lock", "../x", "a b", "-x"]), argv_text)


def _edit(front: dict[str, Any], where: str, value: Any) -> str | None:
    """Apply one generated change to the front matter; raw text replaces it all."""
    target = front["target"]
    if where == "raw":
        return str(value)
    if where == "space":
        target["knobs"]["space"] = value
    elif where == "knob_file":
        target["knobs"]["file"] = value
    elif where == "correct":
        target["correct"] = value
    elif where == "laughs":
        return (
            "---\nl0: &l0 [a, a, a, a, a, a, a, a, a]\n"
            + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 8))
            + "name: *l7\n---\n"
        )
    else:
        front[where] = value
    return None


edits = st.one_of(
    st.tuples(st.just("space"), knob_spaces),
    st.tuples(
        st.just("knob_file"),
        st.sampled_from(["knobs.json", "/etc/hosts", "../k.json", "a/../../k.json", "", "sub/k"]),
    ),
    st.tuples(
        st.just("correct"),
        st.one_of(file_text, st.integers(0, 990).map(lambda n: "-" * n + "err == 0")),
    ),
    st.tuples(st.sampled_from(["name", "metric", "timeout", "decide", "stop"]), knob_values),
    st.tuples(st.just("raw"), file_text),
    st.tuples(st.just("laughs"), st.none()),
    st.tuples(st.just("valid"), st.none()),
)


def invoke(cwd: Path, *args: str) -> Result:
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exc_info,
    )
    assert result.exit_code in DOCUMENTED_EXITS, (args, result.exit_code, result.output)
    assert "Traceback" not in _own_words(result.output)
    return result


def _own_words(output: str) -> str:
    """kernelopt's output without a crashed benchmark's own last lines, which may hold
    the benchmark's traceback: quoted under a verdict ("| ...") or as ``output_tail``."""
    try:
        data = json.loads(output)
    except ValueError:
        lines = output.splitlines()
        return "\n".join(line for line in lines if not line.lstrip().startswith("|"))

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("output_tail", "output")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return json.dumps(strip(data))


def checkout(root: Path) -> tuple[str, str]:
    head = git(root, "rev-parse", "--verify", "-q", "HEAD", check=False).strip()
    return head, git(root, "status", "--porcelain", "--untracked-files=all")


def assert_sound(root: Path) -> None:
    """git fsck is clean and every attempt ref has exactly one kernelopt note."""
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress"], cwd=root, capture_output=True, text=True
    )
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert not any(
        line.startswith(("error", "missing", "broken", "bad"))
        for line in (fsck.stdout + fsck.stderr).splitlines()
    ), fsck.stdout + fsck.stderr
    refs = git(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/kernelopt/")
    for line in refs.splitlines():
        name, sha = line.split()
        if "/attempts/" in name:
            notes = git(root, "notes", "--ref", "kernelopt", "list", sha, check=False)
            assert len(notes.split()) == 1, (name, notes)
            json.loads(git(root, "notes", "--ref", "kernelopt", "show", sha))


@settings(max_examples=100, **SETTINGS)
@given(edit=edits, tag=tags, committed=st.booleans() | st.just(True))
def test_any_program_and_tag_end_in_a_documented_exit(
    tmp_path_factory: pytest.TempPathFactory,
    quiet_bench: None,
    edit: tuple[str, Any],
    tag: str,
    committed: bool,
) -> None:
    root = tmp_path_factory.mktemp("repo")
    front = yaml.safe_load(program_text(space=(100, 80)).split("---\n")[1])
    raw = _edit(front, *edit)
    text = raw if raw is not None else "---\n" + yaml.safe_dump(front) + "---\nTune X.\n"
    if committed:
        repo = build_bench_repo(root)
        repo.program.write_text(text, encoding="utf-8")
        git(root, "add", "-A")
        git(root, "commit", "-q", "--allow-empty", "-m", "the program under test")
        program = repo.program
    else:  # a new repository: nothing committed yet
        make_repo(root)
        program = root / "program.md"
        program.write_text(text, encoding="utf-8")
    before = checkout(root)

    invoke(root, "run", str(program), "--tag", tag, "--max-candidates", "1")
    invoke(root, "status")
    invoke(root, "log", "--plain")

    assert checkout(root) == before
    assert_sound(root)


knob_x = st.one_of(
    st.floats(),
    st.integers(-(10**30), 10**30),
    st.sampled_from(["wrong", "fail", "split:50:NaN", "split:-1:1e308", "junk", ""]),
)


@pytest.fixture
def started(tmp_path: Path, quiet_bench: None) -> BenchRepo:
    """A run with its baseline measured; no stop rule ends it while examples run."""
    repo = build_bench_repo(
        tmp_path / "repo", space=None, decide={"max_consecutive_regressions": 10_000}
    )
    assert invoke(repo.root, "run", str(repo.program), "--tag", "t").exit_code == 0
    return repo


@settings(max_examples=100, **SETTINGS)
@given(x=knob_x, hypothesis_text=argv_text, view=st.sampled_from(["status", "log", "none"]))
def test_any_try_ends_in_a_documented_exit(
    started: BenchRepo, x: Any, hypothesis_text: str, view: str
) -> None:
    repo = started
    before = checkout(repo.root)
    (repo.worktree() / "knobs.json").write_text(json.dumps({"X": x}) + "\n")

    result = invoke(repo.worktree(), "try", "-m", hypothesis_text, "--json")
    if view != "none":
        invoke(repo.root, view, *(["--plain"] if view == "log" else []), "--run", repo.run_id())

    if result.exit_code != 2:  # a refused hypothesis leaves the edit for the next try
        assert json.loads(result.stdout)["verdict"] != "keep" or _finite_positive(x)
    assert checkout(repo.root) == before
    assert_sound(repo.root)


def _finite_positive(x: Any) -> bool:
    try:
        return 0 < float(x) < float("inf")
    except (TypeError, ValueError):
        return False
