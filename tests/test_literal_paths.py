"""Paths are taken literally: a folder really named `$HOME` is not an environment variable."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks_support.gitrepo import build_bench_repo, git, run_kernelopt


def test_run_in_a_repository_under_a_folder_named_dollar_home(
    tmp_path: Path, quiet_bench: None
) -> None:
    repo = build_bench_repo(tmp_path / "$HOME" / "repo", space=[100, 80])

    result = run_kernelopt(repo.root, "run", str(repo.program), "--tag", "t")

    assert result.returncode == 0, result.stderr
    assert [n["verdict"] for n in repo.notes().values()] == ["baseline", "keep"]
    best = json.loads(git(repo.root, "show", f"{repo.ref('best')}:knobs.json"))
    assert best == {"X": 80}
    status = run_kernelopt(repo.worktree(), "status", "--json")
    assert status.returncode == 0, status.stderr
