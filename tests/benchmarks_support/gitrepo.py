"""Real git repositories in temporary folders, holding a benchmark the tests steer.

The benchmark (``bench.py`` beside this file) reads ``knobs.json`` and its
outcome is chosen by the knob ``X`` (see its docstring), so a test picks
keep / tie / regression / failed / incorrect / diverged by listing values.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

BENCH = Path(__file__).parent / "bench.py"
# -S skips site imports: the benchmark needs only the standard library and
# starts several times faster, which matters with six runs per noisy candidate.
BENCH_COMMAND = f"{shutil.which('python3') or sys.executable} -S bench.py"
# A small noise threshold and few samples keep noisy decisions to a handful of runs.
FAST_DECIDE = {"noise": "1%", "confirm": 2, "max_samples": 4}


def git(cwd: Path, *args: str, input: str | None = None, check: bool = True) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, input=input, capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}: {proc.stderr}")
    return proc.stdout


def make_repo(path: Path) -> Path:
    """An empty git repository with an identity of its own (no global config needed)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Test User")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "commit.gpgsign", "false")
    return path


def program_text(
    *,
    name: str = "x",
    space: Sequence[Any] | None = (100, 80),
    decide: Mapping[str, Any] | None = None,
    classes: bool = False,
    stop: Mapping[str, Any] | None = None,
    timeout: str = "20s",
    results: str = "csv",
    body: str = "Tune X.\n",
    fixed: Sequence[str] | None = None,
) -> str:
    """A command-target program over bench.py, as program.md text."""
    target: dict[str, Any] = {
        "kind": "command",
        "command": BENCH_COMMAND,
        "results": (
            {"format": "csv", "path": "results/out.csv"}
            if results == "csv"
            else {"format": "stdout"}
        ),
        "correct": "err == 0",
    }
    if classes:
        target["config_columns"] = ["cls"]
    if space is not None:
        target["knobs"] = {"file": "knobs.json", "space": {"X": list(space)}}
    if fixed is not None:
        target["fixed"] = list(fixed)
    front: dict[str, Any] = {
        "kernelopt": 1,
        "name": name,
        "target": target,
        "metric": {"name": "time", "better": "lower"},
        "device": {"kind": "none"},
        "decide": {**FAST_DECIDE, **(decide or {})},
        "timeout": timeout,
    }
    if stop:
        front["stop"] = dict(stop)
    return "---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n" + body


@dataclass(frozen=True)
class BenchRepo:
    """A user's repository holding bench.py, knobs.json and programs/<name>.md."""

    root: Path
    program: Path
    name: str

    def run_id(self, tag: str = "t") -> str:
        return f"{self.name}-{tag}"

    def worktree(self, tag: str = "t") -> Path:
        return self.root / ".git" / "kernelopt" / "worktrees" / self.run_id(tag)

    def branch(self, tag: str = "t") -> str:
        return f"kernelopt/{self.run_id(tag)}"

    def ref(self, name: str, tag: str = "t") -> str:
        return f"refs/kernelopt/{self.run_id(tag)}/{name}"

    def rev(self, rev: str) -> str | None:
        out = git(self.root, "rev-parse", "--verify", "-q", rev, check=False).strip()
        return out or None

    def attempt_refs(self, tag: str = "t") -> dict[int, str]:
        prefix = self.ref("attempts/", tag)
        out = git(self.root, "for-each-ref", "--format=%(refname) %(objectname)", prefix)
        refs = {}
        for line in out.splitlines():
            name, sha = line.split()
            refs[int(name[len(prefix) :])] = sha
        return refs

    def note(self, sha: str) -> dict[str, Any]:
        return json.loads(git(self.root, "notes", "--ref", "kernelopt", "show", sha))

    def notes(self, tag: str = "t") -> dict[int, dict[str, Any]]:
        return {n: self.note(sha) for n, sha in sorted(self.attempt_refs(tag).items())}

    def ledger(self, tag: str = "t") -> str:
        """performance.md as committed on the run branch."""
        return git(self.root, "show", f"{self.branch(tag)}:performance.md")

    def branch_subjects(self, tag: str = "t") -> list[str]:
        return git(self.root, "log", "--format=%s", self.branch(tag)).splitlines()


@dataclass(frozen=True)
class Cli:
    """Runs ``kernelopt`` in this process (fast) from a chosen directory."""

    monkeypatch: pytest.MonkeyPatch

    def __call__(self, *args: str, cwd: Path) -> Result:
        from kernelopt.cli import main

        self.monkeypatch.chdir(cwd)
        return CliRunner().invoke(main, list(args), catch_exceptions=False)

    def json(self, *args: str, cwd: Path) -> Any:
        result = self(*args, "--json", cwd=cwd)
        return json.loads(result.stdout)


RepoFactory = Callable[..., BenchRepo]


def build_bench_repo(
    root: Path, x0: Any = 100, *, ignore_results: bool = True, **program: Any
) -> BenchRepo:
    """A committed repository with bench.py, knobs.json {"X": x0} and programs/<name>.md."""
    make_repo(root)
    shutil.copy(BENCH, root / "bench.py")
    (root / "knobs.json").write_text(json.dumps({"X": x0}, indent=2) + "\n")
    if ignore_results:
        (root / ".gitignore").write_text("results/\n")
    name = program.get("name", "x")
    path = root / "programs" / f"{name}.md"
    path.parent.mkdir()
    path.write_text(program_text(**program))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a benchmark to tune")
    return BenchRepo(root, path, name)


def run_kernelopt(
    cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """kernelopt as a user runs it: its own process, in ``cwd``, with ``env`` on top of ours."""
    return subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
