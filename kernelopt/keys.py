"""Declaring configuration keys once: their types, defaults, checks and help.

A ``Section`` of ``Key``s validates a mapping (every problem at once, each with
its key path), fills in defaults, and lists itself for the docs. schema.py
declares program.md's keys with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kernelopt.durations import parse_duration

MISSING: Any = object()


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class Key:
    """A leaf value. ``kind`` names the accepted type for messages."""

    kind: str
    help: str
    default: Any = MISSING
    choices: tuple[Any, ...] = ()
    check: Callable[[Any], str | None] | None = None  # returns a message when invalid

    @property
    def required(self) -> bool:
        return self.default is MISSING


@dataclass(frozen=True)
class Section:
    help: str
    keys: Mapping[str, Key | Section]
    required: bool = False
    open: bool = False  # free-form mapping (e.g. a knob space), values checked by ``check``
    check: Callable[[Any], str | None] | None = None


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "number": (int, float),
    "bool": (bool,),
    "list[str]": (list,),
    "range": (list,),
    "duration": (str, int, float),
    "percent": (str, int, float),
    "mapping": (dict,),
}


def parse_percent(value: Any) -> float:
    """A fraction from ``1%`` or ``0.01`` (a bare number below 1 is a fraction)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a percentage like 1%, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not text.endswith("%"):
            raise ValueError(f"expected a percentage like 1%, got {value!r}")
        try:
            number = float(text[:-1]) / 100.0
        except ValueError:
            raise ValueError(f"expected a percentage like 1%, got {value!r}") from None
    else:
        number = float(value)
        if number >= 1:
            number /= 100.0
    if not 0 <= number < 1:
        raise ValueError(f"a noise threshold must be between 0% and 100%, got {value!r}")
    return number


def positive(value: Any) -> str | None:
    return None if value is None or value > 0 else f"must be positive, got {value!r}"


def range_ok(value: Any) -> str | None:
    """``[lo, hi]``: two numbers or nulls, lo below hi."""
    numeric = all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v))
        for v in value
    )
    if len(value) != 2 or not numeric:
        return f"expected [lo, hi] with numbers or null, got {value!r}"
    lo, hi = value
    if lo is not None and hi is not None and lo >= hi:
        return f"lo must be below hi, got {value!r}"
    return None


def non_negative(value: Any) -> str | None:
    return None if value >= 0 else f"must be 0 or more, got {value!r}"


def parses(parse: Callable[[Any], object]) -> Callable[[Any], str | None]:
    """A check that passes when ``parse`` accepts the value, else returns its message."""

    def check(value: Any) -> str | None:
        try:
            parse(value)
        except ValueError as exc:
            return str(exc)
        return None

    return check


def positive_duration_ok(value: Any) -> str | None:
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        return str(exc)
    if not (math.isfinite(seconds) and seconds > 0):
        return f"must be a positive duration such as 30s or 10m, got {value!r}"
    return None


duration_ok = parses(parse_duration)
percent_ok = parses(parse_percent)


def knob_values_ok(name: str, values: Any) -> str | None:
    """A knob's values: a non-empty list of distinct scalars (str, int, float, or only booleans).

    Each value is written to the knob file and compared with the others, so a
    list, mapping or null has no meaning there, and ``1`` beside ``true`` (equal
    in Python, different in JSON) would make two candidates one.
    """
    example = f"e.g. {name}: [32, 64, 128]"
    if not isinstance(values, list) or not values:
        return f"must list at least one value, {example}"
    for value in values:
        if isinstance(value, float) and not math.isfinite(value):
            return f"values must be finite numbers, found {value!r}"
        if not isinstance(value, str | int | float | bool):
            return f"values must be strings or numbers, found {type(value).__name__} {value!r}"
    if any(isinstance(v, bool) for v in values) and not all(isinstance(v, bool) for v in values):
        return f"booleans cannot be mixed with other values, found {values!r}"
    seen: list[Any] = []
    for value in values:
        if value in seen:
            return f"value {value!r} is listed twice"
        seen.append(value)
    return None


def ray_address_ok(value: Any) -> str | None:
    if value in ("auto", "local") or value.startswith("ray://"):
        return None
    return f"expected auto, local or a ray://host:port address, got {value!r}"


def resources_ok(value: Any) -> str | None:
    for name, amount in value.items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount <= 0:
            return f"resource {name!r} needs a positive amount, got {amount!r}"
    return None


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "str|mapping":
        return isinstance(value, (str, dict))
    types = _TYPES[kind]
    if kind in ("int", "number") and isinstance(value, bool):
        return False
    if not isinstance(value, types):
        return False
    if kind == "list[str]":
        return all(isinstance(v, str) for v in value)
    return True


def validate(data: Any, section: Section, path: str = "") -> tuple[dict[str, Any], list[Problem]]:
    """Check ``data`` against ``section``; return it with defaults filled, and every problem."""
    problems: list[Problem] = []
    if not isinstance(data, dict):
        problems.append(Problem(path, f"expected a mapping, found {type(data).__name__}"))
        return {}, problems
    out: dict[str, Any] = {}
    for name in data:
        if name not in section.keys:
            allowed = ", ".join(section.keys)
            problems.append(Problem(_join(path, str(name)), f"unknown key (allowed: {allowed})"))
    for name, spec in section.keys.items():
        where = _join(path, name)
        if isinstance(spec, Section):
            if name not in data or data[name] is None:
                if spec.required:
                    problems.append(Problem(where, f"missing section ({spec.help})"))
                sub, sub_problems = validate({}, spec, where)
                problems.extend(p for p in sub_problems if spec.required is False or name in data)
                out[name] = sub
            else:
                sub, sub_problems = validate(data[name], spec, where)
                problems.extend(sub_problems)
                out[name] = sub
            continue
        if name not in data:
            if spec.required:
                problems.append(Problem(where, f"missing required key ({spec.kind}: {spec.help})"))
            else:
                out[name] = _copy(spec.default)
            continue
        value = data[name]
        if value is None and not spec.required and spec.default is None:
            out[name] = None
            continue
        if not _type_ok(spec.kind, value):
            problems.append(
                Problem(where, f"expected {spec.kind}, found {type(value).__name__} {value!r}")
            )
            continue
        if spec.choices and value not in spec.choices:
            options = ", ".join(str(c) for c in spec.choices)
            problems.append(Problem(where, f"expected one of {options}, found {value!r}"))
            continue
        if spec.check is not None:
            message = spec.check(value)
            if message:
                problems.append(Problem(where, message))
                continue
        out[name] = value
    return out, problems


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def reference(section: Section, path: str = "") -> list[tuple[str, str, str, str]]:
    """(key path, type, default, help) rows for docs and `kernelopt init --help`."""
    rows: list[tuple[str, str, str, str]] = []
    for name, spec in section.keys.items():
        where = _join(path, name)
        if isinstance(spec, Section):
            rows.append((where, "section", "required" if spec.required else "", spec.help))
            rows.extend(reference(spec, where))
        else:
            default = "required" if spec.required else repr(spec.default)
            rows.append((where, spec.kind, default, spec.help))
    return rows
