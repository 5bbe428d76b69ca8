"""Sending one commit's tree to a host as `git archive` bytes."""

from __future__ import annotations

import os
import subprocess

from kernelopt.hosts.base import Host, HostError


def archive_commit(repo_path: str | os.PathLike[str], commit: str) -> bytes:
    """The tar of `commit`'s tree: exactly what was committed, nothing uncommitted."""
    result = subprocess.run(
        ["git", "-C", os.fspath(repo_path), "archive", "--format=tar", commit, "--"],
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        raise ValueError(
            f"git archive {commit!r} in {os.fspath(repo_path)} failed: "
            f"{result.stderr.decode('utf-8', 'replace').strip()}"
        )
    return result.stdout


def ship_commit(host: Host, repo_path: str | os.PathLike[str], commit: str) -> str:
    """Unpack `commit` into a fresh directory on `host` and return its path.

    The caller owns the directory and removes it with host.remove_tree().
    """
    data = archive_commit(repo_path, commit)
    directory = host.mkdtemp(prefix="kernelopt-commit-")
    try:
        result = host.run(["tar", "-x", "-f", "-", "-C", directory], stdin=data, timeout=300)
        if not result.ok:
            raise HostError(
                host.name, f"unpacking {commit} into {directory} failed: {result.stderr.strip()}"
            )
    except BaseException:
        host.remove_tree(directory)
        raise
    return directory
