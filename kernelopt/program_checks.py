"""Checks of a program that need more than one key: keys that depend on the target's
kind, paths that must stay inside the repository, the knob space, screening."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelopt.keys import Problem
from kernelopt.schema import knob_space_problems

# Metrics an nki target produces: the sim/profiler record fields plus short aliases.
NKI_METRIC_ALIASES = {"mfu": "mfu_estimated_percent", "time": "total_time"}
NKI_METRICS = frozenset(
    {
        "total_time",
        "total_active_time",
        "mfu_estimated_percent",
        "mfu_max_achievable_estimated_percent",
        "mbu_estimated_percent",
        "hfu_estimated_percent",
        "roofline_efficiency",
        "roofline_percent",
        "min_ms",
        "median_ms",
        *NKI_METRIC_ALIASES,
    }
)


def screen_checks(screen: dict[str, Any], target_kind: str | None) -> list[Problem]:
    """search.screen needs both numbers (top at most pool) and an nki target."""
    pool, top = screen.get("pool"), screen.get("top")
    if pool is None and top is None:
        if screen.get("calibration"):
            return [Problem("search.screen.calibration", "only with search.screen.pool and top")]
        return []
    if pool is None or top is None:
        missing = "pool" if pool is None else "top"
        return [Problem(f"search.screen.{missing}", "required when search.screen is set")]
    if top > pool:
        return [Problem("search.screen.top", f"at most search.screen.pool ({pool}), got {top}")]
    if target_kind not in ("nki", None):  # None: the missing target is reported already
        return [Problem("search.screen", "screens knob candidates of nki targets only")]
    return []


def cross_checks(values: dict[str, Any], root: Path) -> list[Problem]:
    """Problems the per-key checks cannot see: keys that depend on the target kind."""
    target = values["target"]
    fixed = [
        problem
        for i, rel in enumerate(target.get("fixed") or [])
        for problem in _inside(f"target.fixed[{i}]", rel, root)
    ]
    if target["kind"] == "nki":
        return fixed + _nki_checks(target, values["metric"]["name"], root)
    problems = fixed + _command_checks(target, values["metric"]["name"])
    knobs = target.get("knobs")
    if isinstance(knobs, dict) and isinstance(knobs.get("file"), str):
        problems += _inside("target.knobs.file", knobs["file"], root)
    return problems


def _nki_checks(target: dict[str, Any], metric: str, root: Path) -> list[Problem]:
    problems: list[Problem] = []
    for key in ("workload", "kernel"):
        if not target.get(key):
            problems.append(Problem(f"target.{key}", "required for target kind 'nki'"))
        problems += _exists(f"target.{key}", target.get(key), root)
    knobs = target.get("knobs")
    if knobs is not None and not isinstance(knobs, str):
        problems.append(Problem("target.knobs", "for nki targets, the path of knobs.json"))
    elif knobs:
        problems += _exists("target.knobs", knobs, root)
    for key in ("command", "correct"):
        if target.get(key):
            problems.append(Problem(f"target.{key}", "only for command targets"))
    if metric not in NKI_METRICS and not metric.endswith(("_percent", "_time")):
        options = ", ".join(sorted(NKI_METRICS))
        problems.append(
            Problem(
                "metric.name", f"an nki target never produces {metric!r} (it produces {options})"
            )
        )
    return problems


def _inside(key: str, rel: str | None, root: Path) -> list[Problem]:
    """A path the run reads or writes must stay in the repository: candidates are commits of it."""
    if not rel:
        return []
    if Path(rel).is_absolute() or ".." in Path(rel).parts:
        return [Problem(key, f"must be a path inside the repository, relative to it: {rel}")]
    if not (root / rel).resolve().is_relative_to(root.resolve()):
        return [Problem(key, f"leads outside the repository (through a symlink): {rel}")]
    return []


def _exists(key: str, rel: str | None, root: Path) -> list[Problem]:
    if outside := _inside(key, rel, root):
        return outside
    if rel and not (root / rel).exists():
        return [Problem(key, f"file does not exist: {rel} (relative to {root})")]
    return []


def _command_checks(target: dict[str, Any], metric: str) -> list[Problem]:
    problems: list[Problem] = []
    if not target.get("command"):
        problems.append(Problem("target.command", "required for target kind 'command'"))
    if target.get("correct") is not None:
        # Imported here: kernelopt.targets imports this module.
        from kernelopt.targets.expr import ExpressionError, parse_expression

        try:
            parse_expression(target["correct"])
        except ExpressionError as exc:
            problems.append(Problem("target.correct", str(exc)))
    for key in ("workload", "kernel", "func"):
        if target.get(key):
            problems.append(Problem(f"target.{key}", "only for nki targets"))
    results = target["results"]
    if results["format"] in ("csv", "json") and not results.get("path"):
        problems.append(Problem("target.results.path", f"required for {results['format']} results"))
    if target.get("knobs") is not None:
        problems += _knob_space_checks(target["knobs"])
    if metric in target.get("config_columns", []):
        problems.append(
            Problem("target.config_columns", "the metric cannot also be a config column")
        )
    return problems


def _knob_space_checks(knobs: Any) -> list[Problem]:
    if not isinstance(knobs, dict):
        return [
            Problem(
                "target.knobs", "for command targets, {file: knobs.json, space: {NAME: [values]}}"
            )
        ]
    problems: list[Problem] = []
    unknown = set(knobs) - {"file", "space"}
    if unknown:
        problems.append(
            Problem("target.knobs", f"unknown keys {sorted(unknown)} (allowed: file, space)")
        )
    if not isinstance(knobs.get("file"), str) or not knobs["file"].strip():
        problems.append(
            Problem("target.knobs.file", "missing: the file the knob assignment is written to")
        )
    space = knobs.get("space")
    if not isinstance(space, dict) or not space:
        problems.append(Problem("target.knobs.space", "missing: {NAME: [values], ...}"))
    else:
        problems += knob_space_problems(space)
    return problems
