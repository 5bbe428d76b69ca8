"""ship_commit sends exactly a commit's tree, not the working tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kernelopt.hosts import Host, LocalHost, ship_commit


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "ir" / "matmul").mkdir(parents=True)
    (path / "ir" / "matmul" / "kernel.py").write_text("TILE = 128\n")
    (path / "it's odd.txt").write_text("quote in name\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "first")
    return path


def test_commit_tree_arrives_and_uncommitted_work_does_not(host: Host, repo: Path) -> None:
    commit = git(repo, "rev-parse", "HEAD")
    (repo / "ir" / "matmul" / "kernel.py").write_text("TILE = 999\n")
    (repo / "untracked.py").write_text("x\n")
    directory = ship_commit(host, repo, commit)
    try:
        assert host.get_bytes(f"{directory}/ir/matmul/kernel.py") == b"TILE = 128\n"
        assert host.get_bytes(f"{directory}/it's odd.txt") == b"quote in name\n"
        assert host.run(["test", "-e", f"{directory}/untracked.py"]).returncode == 1
    finally:
        host.remove_tree(directory)
    assert host.run(["test", "-e", directory]).returncode == 1


def test_unknown_commit_is_a_clear_error(repo: Path) -> None:
    with pytest.raises(ValueError, match="git archive 'no-such-ref'"):
        ship_commit(LocalHost(), repo, "no-such-ref")
