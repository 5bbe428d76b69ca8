"""Which processes are kernelopt's own, so a gate does not see itself as a user."""

from __future__ import annotations

import os
from pathlib import Path


def own_pids(root: int | None = None) -> frozenset[int]:
    """This process and all its descendants (Linux /proc; just this pid elsewhere)."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            parent = _parent_pid(entry / "stat")
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found = {root}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return frozenset(found)


def _parent_pid(stat: Path) -> int | None:
    try:
        text = stat.read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses; fields follow the last ')'.
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None
