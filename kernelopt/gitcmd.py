"""Running git, and the git state kernelopt shares between processes.

Runs of one repository share the notes ref, and a killed process leaves lock
files behind. Notes are therefore written by compare-and-swap, and the holder
of a run's lock removes the locks a dead process left in that run's refs.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import threading
import time
from pathlib import Path

NOTES_REF = "refs/notes/kernelopt"
NOTES_SCRATCH = "refs/notes/kernelopt-scratch"  # one ref per writer while it writes a note
_NOTE_WRITE_S = 60.0  # how long one note write retries its compare-and-swap
_STALE_SHARED_LOCK_S = 10.0  # a note write holds the shared lock for milliseconds


class HistoryError(RuntimeError):
    """A git operation kernelopt needs failed; the message says which and why."""


class Git:
    """Runs git in one directory. Plain subprocess: it is the hot path."""

    def __init__(self, cwd: Path):
        self.cwd = Path(cwd)
        self.env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}

    def __call__(self, *args: str, input: str | bytes | None = None, check: bool = True) -> str:
        data = input.encode() if isinstance(input, str) else input
        proc = subprocess.run(
            ["git", *args], cwd=self.cwd, input=data, capture_output=True, env=self.env
        )
        if check and proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip()
            raise HistoryError(f"git {' '.join(args[:3])} failed in {self.cwd}: {err}")
        return proc.stdout.decode(errors="replace")

    def ok(self, *args: str, input: str | None = None) -> bool:
        data = input.encode() if input is not None else None
        return (
            subprocess.run(
                ["git", *args], cwd=self.cwd, input=data, capture_output=True, env=self.env
            ).returncode
            == 0
        )

    def raw(self, *args: str, input: str | None = None) -> bytes:
        data = input.encode() if input is not None else None
        proc = subprocess.run(
            ["git", *args], cwd=self.cwd, input=data, capture_output=True, env=self.env
        )
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip()
            raise HistoryError(f"git {' '.join(args[:3])} failed in {self.cwd}: {err}")
        return proc.stdout


def write_note(git: Git, common_dir: Path, writer: str, sha: str, text: str) -> None:
    """Attach ``text`` to ``sha`` in the notes ref, never losing another writer's note.

    ``git notes add`` moves the notes ref without checking where it was, so
    two runs writing at once keep only one of their notes. The note is
    written on a scratch notes ref copied from the shared one, and the shared
    ref moves only if it is still where the copy was taken: the new notes
    commit's parent (one ``update-ref --stdin`` transaction that also drops
    the scratch ref); otherwise the write starts again from the new tip.
    Three git calls per note: notes are written once per attempt.
    """
    scratch = f"{NOTES_SCRATCH}/{writer}-{threading.get_ident()}"
    deadline = time.monotonic() + _NOTE_WRITE_S
    pause = 0.005
    while True:
        copied = git.ok("update-ref", scratch, NOTES_REF)  # fails while there is no note yet
        if not copied:
            git("update-ref", "-d", scratch, check=False)
        git("notes", "--ref", scratch, "add", "-f", "-F", "-", sha, input=text)
        move = (
            f"update {NOTES_REF} {scratch} {scratch}^\n"
            if copied
            else f"create {NOTES_REF} {scratch}\n"
        )
        transaction = f"{move}delete {scratch}\n"
        if git.ok("update-ref", "-m", f"kernelopt note by {writer}", "--stdin", input=transaction):
            return
        drop_stale_notes_lock(common_dir)
        if time.monotonic() > deadline:
            raise HistoryError(
                f"{git.cwd}: could not move {NOTES_REF} within {_NOTE_WRITE_S:g}s "
                "(another process keeps moving or locking it)"
            )
        time.sleep(random.uniform(pause / 2, pause))
        pause = min(pause * 2, 0.2)


def drop_stale_notes_lock(common_dir: Path) -> Path | None:
    """Remove the shared notes ref's lock once it is older than any note write takes."""
    lock = common_dir / f"{NOTES_REF}.lock"
    with contextlib.suppress(FileNotFoundError):
        if time.time() - lock.stat().st_mtime > _STALE_SHARED_LOCK_S:
            lock.unlink()
            return lock
    return None


def clear_stale_locks(git: Git, common_dir: Path, run_id: str, worktree: Path) -> list[Path]:
    """Remove the lock files a dead process left in run ``run_id``'s refs and worktree.

    The caller must hold the run's lock. git refuses every later step while
    such a file exists. Scratch notes refs the run left go too; the shared
    notes ref's lock only once it is stale.
    """
    candidates = [
        common_dir / "refs" / "heads" / "kernelopt" / f"{run_id}.lock",
        *(common_dir / "refs" / "kernelopt" / run_id).rglob("*.lock"),
    ]
    admin = worktree_admin_dir(worktree)
    if admin is not None:
        candidates += [admin / "HEAD.lock", admin / "index.lock", admin / "ORIG_HEAD.lock"]
    removed = []
    for path in candidates:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
    shared = drop_stale_notes_lock(common_dir)
    if shared is not None:
        removed.append(shared)
    for ref in git("for-each-ref", "--format=%(refname)", f"{NOTES_SCRATCH}/{run_id}/").split():
        git("update-ref", "-d", ref, check=False)
    return removed


def worktree_admin_dir(worktree: Path) -> Path | None:
    """The worktree's folder under ``.git/worktrees`` (its ``.git`` file names it)."""
    dotgit = worktree / ".git"
    if not dotgit.is_file():
        return None
    text = dotgit.read_text(errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    admin = Path(text.removeprefix("gitdir:").strip())
    return admin if admin.is_absolute() else (worktree / admin).resolve()
