"""One kernelopt process per run: an flock on a file under the repository's git directory.

The kernel releases an flock when its holder dies, so a SIGKILLed runner never
leaves a run locked; the file holds the holder's pid for the error message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kernelopt.hosts.children as children
from kernelopt.measurement import Fault


class RunBusy(RuntimeError):
    """Another kernelopt process holds this run."""


@dataclass(frozen=True)
class Held:
    """A run held by this process; ``reaped``: process groups the previous holder left running."""

    reaped: list[int]


@contextlib.contextmanager
def run_lock(common_dir: Path, run_id: str) -> Iterator[Held]:
    """Hold run ``run_id`` for the duration of the block, or raise RunBusy at once.

    Benchmarks a killed previous holder left running are killed first (see
    ``kernelopt.hosts.children``), so two never measure in one worktree at once.
    """
    lock_dir = Path(common_dir) / "kernelopt" / "locks"
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_dir / f"{run_id}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise Fault(f"cannot take the lock of run {run_id} in {lock_dir}: {exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 64).decode(errors="replace").strip()
        os.close(fd)
        raise RunBusy(
            f"run {run_id} is in use by another kernelopt process (pid {holder or '?'})"
        ) from None
    record = lock_dir / f"{run_id}.children"
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
    except OSError as exc:
        os.close(fd)
        raise Fault(f"cannot write the lock of run {run_id} in {lock_dir}: {exc}") from None
    try:
        held = Held(reaped=children.reap(record))
        children.track(record)
        yield held
    finally:
        children.track(None)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextlib.contextmanager
def worktree_admin(common_dir: Path) -> Iterator[None]:
    """Hold the repository's worktree administration (blocking) for the block.

    ``git worktree prune`` removes a ``.git/worktrees/<name>`` entry that a
    concurrent ``git worktree add`` has created but not yet marked as being
    initialised, and that add then fails. Runs of one repository starting at
    once therefore prune and add one at a time.
    """
    lock_dir = Path(common_dir) / "kernelopt" / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_dir / "worktrees.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
