"""Reading a run's state when something else damaged it: a note that is not a
record, a worktree whose HEAD an agent moved (recovery.py repairs both)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelopt.decide import Counters
from kernelopt.gitcmd import NOTES_REF, Git


def note_problem(note: Any, attempt: int) -> str | None:
    """Why ``note`` is not the record of attempt ``attempt`` (None when it is)."""
    if isinstance(note, str):
        return note
    if not isinstance(note, dict) or "kernelopt" not in note:
        return "is not a kernelopt note"
    if note.get("attempt") != attempt:
        return f"names attempt {note.get('attempt')!r}"
    if not isinstance(note.get("verdict"), str) or not note["verdict"]:
        return "has no verdict"
    metric = note.get("metric")
    if metric is not None and (isinstance(metric, bool) or not isinstance(metric, int | float)):
        return f"has a metric that is not a number ({metric!r})"
    if not isinstance(note.get("measurement") or {}, dict):
        return "has a measurement that is not a record"
    spread = note.get("spread")
    if spread and not (
        isinstance(spread, dict)
        and all(isinstance(spread.get(k), int | float) for k in ("var", "df"))
    ):
        return "has a spread that is not a record of numbers"
    try:
        Counters.from_json(note.get("counters") or {})
    except (AttributeError, TypeError, ValueError):
        return "has counters that are not a record of numbers"
    return None


def earlier_note(git: Git, sha: str, attempt: int) -> dict[str, Any] | None:
    """The newest readable version of ``sha``'s note in the notes ref's history.

    Every note write is a commit of the notes ref, so a note overwritten with
    garbage (``git notes add -f``) is still there one commit back.
    """
    paths = [sha, f"{sha[:2]}/{sha[2:]}", f"{sha[:2]}/{sha[2:4]}/{sha[4:]}"]  # any fan-out
    log = git("log", "--format=%H", NOTES_REF, "--", *paths, check=False)
    for commit in log.split():
        for path in paths:
            text = git("show", f"{commit}:{path}", check=False)
            try:
                note = json.loads(text) if text.strip() else None
            except json.JSONDecodeError:
                continue
            if note is not None and note_problem(note, attempt) is None:
                return note
    return None


def attached_to(worktree: Path) -> str | None:
    """The ref a worktree's HEAD names (``refs/heads/...``); None when detached.

    Read from the HEAD file: it is checked before every commit, so it must be cheap.
    """
    dotgit = worktree / ".git"
    try:
        if dotgit.is_file():
            gitdir = Path(dotgit.read_text().strip().removeprefix("gitdir:").strip())
            dotgit = gitdir if gitdir.is_absolute() else (worktree / gitdir).resolve()
        text = (dotgit / "HEAD").read_text().strip()
    except OSError:
        return None
    return text[4:].strip() if text.startswith("ref:") else None


def damage(
    restored: Sequence[tuple[int, str, str]],
    corrupt: Sequence[tuple[int, str, str]],
    best_ref_lost: bool = False,
) -> list[str]:
    """Warnings for notes read from their earlier version, unreadable ones, a lost best ref."""
    said = ["the best ref is missing; the next run or try rebuilds it from the notes"]
    said = said if best_ref_lost else []
    said += [
        f"the note of attempt #{n} ({sha[:12]}) {why}; its last readable version "
        "in the notes history is used"
        for n, sha, why in restored
    ]
    return said + [
        f"the note of attempt #{n} ({sha[:12]}) {why}, and no readable version of it is "
        "left: BEST and the counters cannot be trusted until it is put back"
        for n, sha, why in corrupt
    ]
