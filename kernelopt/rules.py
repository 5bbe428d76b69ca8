"""The rules of a run are not the candidate's: which paths a candidate may not
change, and what changed in a program since its run started.

A run goes by its program as the run's start commit holds it. The program
file, performance.md (written only by kernelopt) and the paths of
``target.fixed`` (by default what measures and judges a candidate: the
files the benchmark command names, the workload, the results file) are
fixed; a candidate that changes one is refused before it is measured.
"""

from __future__ import annotations

import fnmatch
import posixpath
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kernelopt.history import LEDGER, RunRepo, RunState
from kernelopt.program import Program


def _repo_relative(token: str) -> str | None:
    """``token`` as a path inside the repository, or None when it cannot be one."""
    if not token or token.startswith(("-", "/", "~", "$")) or "=" in token:
        return None
    rel = posixpath.normpath(token)
    if rel in (".", "") or rel == ".." or rel.startswith("../"):
        return None
    return rel


def fixed_paths(
    program: Program, program_rel: str | None, exists: Callable[[Sequence[str]], set[str]]
) -> tuple[str, ...]:
    """The paths a candidate of ``program`` may not change.

    ``exists`` answers which of some repository paths are files at the run's
    start (one git call for every word of the command).
    """
    always = [p for p in (program_rel, LEDGER) if p]
    target = program.target
    if target.fixed is not None:
        return tuple(dict.fromkeys([*always, *target.fixed]))
    tuned = {target.kernel, target.knobs.file if target.knobs else None}
    derived: list[str] = []
    if target.command:
        try:
            words = shlex.split(target.command)
        except ValueError:
            words = []
        candidates = [rel for w in words if (rel := _repo_relative(w)) and rel not in tuned]
        derived += sorted(exists(candidates)) if candidates else []
    derived += [p for p in (target.results_path, target.workload) if p and p not in tuned]
    return tuple(dict.fromkeys([*always, *derived]))


def _matches(path: str, rule: str) -> bool:
    rule = rule.strip().rstrip("/")
    if not rule:
        return False
    return path == rule or path.startswith(rule + "/") or fnmatch.fnmatchcase(path, rule)


def breaking(changed: Iterable[str], fixed: Sequence[str]) -> list[str]:
    """The changed paths the rules fix, in order."""
    return [path for path in changed if any(_matches(path, rule) for rule in fixed)]


def refusal(paths: Sequence[str]) -> str:
    """What a refused candidate's record and the agent are told."""
    return (
        f"refused: the candidate changes {', '.join(paths)}, which the run's rules fix "
        "(the program, performance.md and target.fixed); it was not measured. "
        "Leave those files as they are and try the rest of the change again"
    )


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, Mapping):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): data}


def rule_changes(started: Program, now: Program) -> list[str]:
    """Each front-matter key (and the brief) that differs, as ``key: old -> new``."""
    before, after = _flatten(started.raw), _flatten(now.raw)
    lines = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, "(unset)"), after.get(key, "(unset)")
        if old != new:
            lines.append(f"{key}: {old} -> {new}")
    if started.body.strip() != now.body.strip():
        lines.append("the brief (the program's body)")
    return lines


class FixedRules:
    """One run's fixed paths, worked out once from its start commit."""

    def __init__(self, program: Program, program_rel: str | None, repo: RunRepo):
        self.program = program
        self.program_rel = program_rel
        self.repo = repo
        self._paths: tuple[str, ...] | None = None

    def paths(self, state: RunState) -> tuple[str, ...]:
        if self._paths is None:
            start = state.baseline.commit if state.baseline else str(state.best_commit)
            self._paths = fixed_paths(
                self.program, self.program_rel, lambda paths: self.repo.files_at(start, paths)
            )
        return self._paths

    def broken_by(self, sha: str, state: RunState) -> list[str]:
        """The fixed paths commit ``sha`` changes against BEST."""
        return breaking(self.repo.files_of(sha, state.best_commit), self.paths(state))
