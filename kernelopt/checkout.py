"""What a run reads from the user's checkout: the committed HEAD, nothing else.

The program file is parsed as committed at HEAD, and the run's worktree starts
from HEAD, so an uncommitted edit (of the program, a knob file, the kernel or
anything else) is never measured. ``ignored`` names the uncommitted changes a
run would otherwise seem to use, for a one-line warning.
"""

from __future__ import annotations

from pathlib import Path

from kernelopt.gitcmd import Git, HistoryError
from kernelopt.history import committed_text, find_repo
from kernelopt.program import Program, program_from_text


def dirty_paths(root: Path) -> list[str]:
    """Paths of the checkout that differ from HEAD (modified, added, deleted, untracked)."""
    out = Git(root)("status", "--porcelain", "--untracked-files=all", check=False)
    paths = []
    for line in out.splitlines():
        path = line[3:].split(" -> ")[-1].strip().strip('"')
        if path:
            paths.append(path)
    return paths


def _roles(program: Program, root: Path) -> dict[str, str]:
    """The files a program names, relative to ``root``, with the role each plays."""
    t = program.target
    named = {
        program.path: "the program",
        t.knobs.file if t.knobs else None: "its knob file",
        t.kernel: "its kernel",
        t.workload: "its workload",
    }
    out = {}
    for path, role in named.items():
        if not path:
            continue
        full = (root / path) if not Path(path).is_absolute() else Path(path)
        try:
            out[str(full.resolve().relative_to(root))] = role
        except ValueError:
            continue
    return out


def ignored(program: Program, root: Path) -> str | None:
    """A one-line warning naming what a run from this checkout ignores, or None when clean."""
    dirty = [p for p in dirty_paths(root) if not p.startswith(".git/")]
    if not dirty:
        return None
    roles = _roles(program, root)
    named = [f"{p} ({roles[p]})" for p in dirty if p in roles]
    others = [p for p in dirty if p not in roles]
    shown = named + others[: max(0, 3 - len(named))]
    more = len(dirty) - len(shown)
    listed = ", ".join(shown) + (f" and {more} more" if more else "")
    return f"uncommitted changes are ignored (the run reads HEAD): {listed}"


def program_at_head(program: Program, root: Path) -> Program:
    """``program`` as committed at HEAD (same path), when its file is tracked and edited."""
    try:
        rel = str(program.path.resolve().relative_to(root.resolve()))
    except ValueError:
        return program  # outside the repository: there is no committed version
    committed = committed_text(root, "HEAD", rel)
    if committed is None or committed == program.path.read_text():
        return program  # not committed yet (the run says so when it needs HEAD), or clean
    return program_from_text(program.path, committed, root)


def read_from_head(program: Program) -> tuple[Program, str | None]:
    """``program`` as committed at HEAD, and the warning naming what the run ignores.

    Outside a git repository both are left as they are: starting the run says why
    it cannot go on.
    """
    try:
        root = find_repo(program.path.resolve().parent)
    except HistoryError:
        return program, None
    at_head, warning = program_at_head(program, root), ignored(program, root)
    if warning and at_head is not program:
        from kernelopt.rules import rule_changes

        if changes := rule_changes(at_head, program):
            warning += "; the program's uncommitted rules are not used: " + "; ".join(changes)
    return at_head, warning
