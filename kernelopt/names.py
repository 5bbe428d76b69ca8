"""Names that become parts of git refs: a program's name, a run's tag.

A run lives on ``kernelopt/<name>-<tag>`` and under ``refs/kernelopt/<name>-<tag>/``,
so both parts must be one safe path component git accepts in a ref name.
"""

from __future__ import annotations

import re

_ALLOWED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_LENGTH = 64


def name_problem(value: object) -> str | None:
    """Why ``value`` cannot name a program or tag a run, or None when it can."""
    if not isinstance(value, str) or not value:
        return "expected a non-empty name"
    if len(value) > MAX_LENGTH:
        return f"at most {MAX_LENGTH} characters, got {len(value)}"
    if not _ALLOWED.fullmatch(value):
        return (
            "use letters, digits, '.', '_' and '-' only, starting with a letter or digit "
            "(it names a git branch)"
        )
    if ".." in value or value.endswith((".", ".lock")):
        return "git refuses '..' and a trailing '.' or '.lock' in a branch name"
    return None
