"""A run's folders: the worktree it owns, the tree it measures, edits it must not lose.

- **Whose worktree.** kernelopt writes only in a worktree it created for the
  run, marked in the worktree's admin folder under the git directory; the
  user's checkout, their other worktrees and folders holding files are
  refused before anything is written.
- **What is measured.** A measurement is of a commit, never of a folder that
  something else may be editing: the commit's tree is put in a folder only
  measurements use (one ``read-tree`` from the previous attempt's tree, which
  also restores files a benchmark altered; files the commit does not hold
  are removed).
- **Edits made while measuring.** A change written into the worktree while
  an attempt was measured is neither measured nor lost: it is saved as a
  commit on ``refs/kernelopt/<run>/edits/<n>`` before the worktree moves, and
  ``try`` puts it back.
"""

from __future__ import annotations

import codecs
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kernelopt.gitcmd import Git, HistoryError

if TYPE_CHECKING:
    from kernelopt.history import RunRepo

MARKER = "kernelopt-run"


def _admin_dir(worktree: Path) -> Path | None:
    """A linked worktree's folder under the git directory (named by its ``.git`` file)."""
    try:
        line = (worktree / ".git").read_text().strip()
    except OSError:  # missing, or a folder: not a linked worktree
        return None
    if not line.startswith("gitdir: "):
        return None
    admin = Path(line[len("gitdir: ") :])
    return admin if admin.is_absolute() else (worktree / admin).resolve()


def marked_by(worktree: Path) -> str | None:
    """The run that created ``worktree``, as its marker says; None without one."""
    admin = _admin_dir(worktree)
    try:
        return (admin / MARKER).read_text().strip() if admin else None
    except OSError:
        return None


def mark_as_run_worktree(worktree: Path, run_id: str) -> None:
    """Say in the worktree's admin folder that kernelopt created it for ``run_id``."""
    admin = _admin_dir(worktree)
    if admin is not None and admin.is_dir():
        (admin / MARKER).write_text(run_id + "\n")


def worktrees(git: Git) -> list[tuple[Path, str | None]]:
    """(path, checked-out branch ref) of every worktree, the user's checkout first."""
    out = git("worktree", "list", "--porcelain", check=False)
    rows: list[tuple[Path, str | None]] = []
    for block in out.strip().split("\n\n"):
        fields = dict(line.partition(" ")[::2] for line in block.splitlines())
        if "worktree" in fields:
            rows.append((Path(fields["worktree"]).resolve(), fields.get("branch")))
    return rows


def registered_worktree(git: Git, default: Path, branch: str, run_id: str) -> Path:
    """The default worktree, or where ``run --worktree`` put this run's worktree."""
    if (default / ".git").exists():
        return default
    for path, checked_out in worktrees(git)[1:]:
        if checked_out == f"refs/heads/{branch}" and marked_by(path) in (None, run_id):
            return path
    return default


def worktree_problem(repo: RunRepo) -> str | None:
    """Why ``repo.worktree`` cannot be this run's worktree, or None (nothing is written).

    Accepted: a worktree kernelopt created for this run, or a new (or empty)
    folder outside the user's checkout for it to create one in.
    """
    path = repo.worktree
    listed = worktrees(repo.git)
    main = listed[0][0] if listed else repo.root
    if path in (main, repo.root):
        return "that is your checkout; kernelopt never writes there"
    for other, branch in listed[1:]:
        if path == other:
            marker = marked_by(path)
            # Without a marker: a worktree made before markers, on the run's branch.
            if marker == repo.run_id or (marker is None and branch == f"refs/heads/{repo.branch}"):
                return None
            return "that is a worktree kernelopt did not create for this run"
    inside_git = repo.common_dir in (path, *path.parents)
    if not inside_git and (main in path.parents or repo.root in path.parents):
        return f"it is inside your checkout {main}, which kernelopt never writes"
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        return "that folder holds files kernelopt did not put there"
    return None


# -- the measured tree ---------------------------------------------------------------


def _unquote(path: str) -> str:
    """A path as ``git ls-tree`` prints it (C-quoted when unusual) as the file system has it."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw: bytes = codecs.escape_decode(path[1:-1].encode())[0]  # type: ignore[attr-defined]
        return raw.decode("utf-8", "surrogateescape")
    return path


def _entries(listing: str) -> dict[str, str]:
    """path -> "mode type object" of a ``git ls-tree -r`` listing."""
    return {path: meta for meta, _, path in (line.partition("\t") for line in listing.splitlines())}


def changed_paths(old: str, new: str) -> tuple[str, ...]:
    """The paths two ``git ls-tree -r`` listings differ in (added, removed, changed)."""
    a, b = _entries(old), _entries(new)
    return tuple(sorted(_unquote(p) for p in a.keys() | b.keys() if a.get(p) != b.get(p)))


def tree_paths(listing: str) -> set[str]:
    """The paths of a ``git ls-tree -r`` listing."""
    return {_unquote(line.split("\t", 1)[1]) for line in listing.splitlines() if "\t" in line}


def _remove_others(root: Path, keep: set[str]) -> None:
    """Remove every file and folder under ``root`` that is not in ``keep`` or holds none of it."""
    needed = {str(parent) for path in keep for parent in Path(path).parents}
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        for name in list(dirs):
            path = (rel / name).as_posix()
            if Path(folder, name).is_symlink():
                files.append(name)
                dirs.remove(name)
            elif path not in needed and path not in keep:
                shutil.rmtree(Path(folder, name), ignore_errors=True)
                dirs.remove(name)
        for name in files:
            if (rel / name).as_posix() not in keep:
                Path(folder, name).unlink(missing_ok=True)


def measure_tree(repo: RunRepo, sha: str) -> Path:
    """``sha``'s tree, exactly, in the folder only this run's measurements use."""
    dest = repo.common_dir / "kernelopt" / "measure" / repo.run_id
    dest.mkdir(parents=True, exist_ok=True)
    git = Git(dest)
    git.env.update(
        GIT_DIR=str(repo.common_dir),
        GIT_WORK_TREE=str(dest),
        GIT_INDEX_FILE=str(dest.parent / f"{repo.run_id}.index"),
    )
    git("read-tree", "--reset", "-u", sha)
    _remove_others(dest, tree_paths(repo.listing(sha)))
    return dest


# -- edits made while measuring ----------------------------------------------------------


def save_edit(repo: RunRepo, attempt: int) -> str:
    """Commit what the worktree holds on top of its HEAD, outside the branch; the commit.

    Written through a scratch index, so neither the worktree nor its index
    change; the commit is kept reachable by ``refs/kernelopt/<run>/edits/<n>``.
    """
    git = Git(repo.worktree)
    git.env.update(repo.wt.env)
    index = repo.common_dir / "kernelopt" / f"edit-{repo.run_id}.index"
    index.parent.mkdir(parents=True, exist_ok=True)
    git.env["GIT_INDEX_FILE"] = str(index)
    try:
        git("read-tree", "HEAD")
        git("add", "-A")
        tree = git("write-tree").strip()
    finally:
        index.unlink(missing_ok=True)
    message = f"kernelopt: edited in the worktree while #{attempt} was measured (not measured)\n"
    sha = git("commit-tree", tree, "-p", "HEAD", "-F", "-", input=message).strip()
    repo.set_ref(f"edits/{attempt}", sha)
    return sha


def restore_edit(repo: RunRepo, sha: str) -> bool:
    """Put a saved edit back into the worktree as an uncommitted change; whether it applied."""
    patch = repo.git("diff", "--binary", f"{sha}^", sha)
    if not patch.strip():
        return True
    try:
        repo.wt("apply", "--whitespace=nowarn", "-", input=patch)
    except HistoryError:
        return False
    return True


def edits_made_while_measuring(repo: RunRepo, *, put_back: bool) -> list[dict[str, object]]:
    """The edits saved since the last call, each put back into the worktree when
    ``put_back`` (``try``), with the line that tells the user where it is."""
    out: list[dict[str, object]] = []
    for attempt, sha in repo.saved_edits:
        ref = repo.ref(f"edits/{attempt}")
        restored = put_back and restore_edit(repo, sha)
        where = (
            "it is back in the worktree as an uncommitted change"
            if restored
            else f"`git diff {ref}^ {ref} | git apply` puts it back"
        )
        message = (
            f"a change made in the worktree while #{attempt} was measured was not measured; "
            f"it is saved as {ref}: {where}"
        )
        out.append({"attempt": attempt, "ref": ref, "restored": restored, "message": message})
    repo.saved_edits.clear()
    return out


def drop_changes(repo: RunRepo, paths: Sequence[str]) -> None:
    """Put ``paths`` of the worktree back as its HEAD has them (removed when it has none)."""
    tracked = repo.files_at(repo.head(), paths)
    if tracked:
        repo.wt("restore", "--source=HEAD", "--worktree", "--", *sorted(tracked))
    for rel in set(paths) - tracked:
        (repo.worktree / rel).unlink(missing_ok=True)
