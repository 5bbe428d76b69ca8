"""Reading a benchmark's per-config result rows: CSV, JSON, or ``key: value`` stdout.

Every reader returns a tuple of rows (plain dicts of JSON-safe values) or raises
ResultsError with the file and what was wrong; the command target turns that
error into a failed Measurement.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Row = dict[str, Any]

# A key is identifier-like so that it can be named in a correctness expression.
_KEY_VALUE = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*:\s*(.*?)\s*$")


class ResultsError(ValueError):
    """Results are missing or cannot be read."""


@dataclass(frozen=True)
class FileStamp:
    """What a results file looked like before the run, to tell stale files from fresh ones."""

    mtime_ns: int
    size: int


def snapshot(root: Path, pattern: str) -> dict[Path, FileStamp]:
    """Stamps of the files matching ``pattern`` under ``root`` right now."""
    stamps: dict[Path, FileStamp] = {}
    for path in root.glob(pattern):
        if path.is_file():
            stat = path.stat()
            stamps[path] = FileStamp(stat.st_mtime_ns, stat.st_size)
    return stamps


def newest_fresh(root: Path, pattern: str, before: Mapping[Path, FileStamp]) -> Path:
    """The newest file matching ``pattern`` that the run created or rewrote.

    Comparing against a snapshot rather than against the start time keeps a
    file written in the same clock tick as the start from being taken as stale
    (file systems stamp times more coarsely than ``time.time_ns``).
    """
    fresh = [path for path, stamp in snapshot(root, pattern).items() if before.get(path) != stamp]
    if not fresh:
        stale = sorted(str(p.relative_to(root)) for p in before)
        detail = f" (only files from before the run: {', '.join(stale)})" if stale else ""
        raise ResultsError(f"the command wrote no results file matching {pattern!r}{detail}")
    return max(fresh, key=lambda p: (p.stat().st_mtime_ns, str(p)))


def read_csv(path: Path) -> tuple[Row, ...]:
    import pandas as pd  # here, not at the top: every CLI start would pay for it

    try:
        # Hand-written benchmarks often emit "n, time_us" or a byte-order mark.
        frame = pd.read_csv(path, skipinitialspace=True, encoding="utf-8-sig")
    except pd.errors.EmptyDataError:
        raise ResultsError(f"{path}: the results file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: not a readable CSV file: {exc}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.empty:
        raise ResultsError(f"{path}: the CSV has a header but no rows")
    return tuple(clean_row(r) for r in frame.to_dict(orient="records"))


def read_json(path: Path) -> tuple[Row, ...]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not UTF-8 text: {exc}") from None
    return rows_from_json(data, str(path))


def rows_from_json(data: Any, source: str) -> tuple[Row, ...]:
    """Accept a list of row objects, an object with a "rows"/"results" list, or one flat row."""
    if isinstance(data, dict):
        for key in ("rows", "results"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
        else:
            data = [data]
    if not isinstance(data, list):
        raise ResultsError(
            f"{source}: expected a list of row objects, an object with a 'rows' or "
            f"'results' list, or one object; got {type(data).__name__}"
        )
    if not data:
        raise ResultsError(f"{source}: the results hold no rows")
    rows = []
    for index, row in enumerate(data):
        if not isinstance(row, dict):
            raise ResultsError(
                f"{source}: row {index} is a {type(row).__name__}, expected an object"
            )
        rows.append(clean_row(row))
    return tuple(rows)


def parse_stdout(text: str) -> tuple[Row, ...]:
    """One row from ``key: value`` lines; numbers are parsed and the last occurrence wins."""
    row: Row = {}
    for line in text.splitlines():
        match = _KEY_VALUE.match(line)
        if match and match.group(2):
            row[match.group(1)] = parse_scalar(match.group(2))
    if not row:
        raise ResultsError("the output holds no 'key: value' lines")
    return (clean_row(row),)


def parse_scalar(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return text


def clean_row(row: Mapping[Any, Any]) -> Row:
    return {str(k): _json_safe(v) for k, v in row.items()}


def _json_safe(value: Any) -> Any:
    # numpy scalars (from pandas) expose .item(); NaN is not valid JSON, so None.
    if hasattr(value, "item") and not isinstance(value, list | dict | str):
        try:
            value = value.item()
        except (TypeError, ValueError):
            value = str(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return clean_row(value)
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def metric_values(rows: Sequence[Row], metric: str, source: str) -> list[float]:
    """The metric of every row as a float; raises ResultsError naming the bad row."""
    if not any(metric in row for row in rows):
        columns = sorted({k for row in rows for k in row})
        raise ResultsError(
            f"{source}: metric {metric!r} not found (columns: {', '.join(columns) or 'none'})"
        )
    values = []
    for index, row in enumerate(rows):
        value = row.get(metric)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ResultsError(f"{source}: row {index} has {metric}={value!r}, expected a number")
        values.append(float(value))
    return values


def class_key(row: Mapping[str, Any], config_columns: Iterable[str]) -> str:
    """``"block=64,n=4096"`` in the declared column order; integral floats print as ints."""
    return ",".join(f"{c}={_format_value(row.get(c))}" for c in config_columns)


def _format_value(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def classes_of(
    rows: Sequence[Row], config_columns: Sequence[str], metric: str
) -> dict[str, dict[str, float]]:
    """Per config class: ``{"mean": metric mean, "count": rows}``; empty without config columns."""
    if not config_columns:
        return {}
    missing = [c for c in config_columns if not any(c in row for row in rows)]
    if missing:
        raise ResultsError(f"config column(s) {', '.join(missing)} not found in the results")
    grouped: dict[str, list[float]] = {}
    for index, row in enumerate(rows):
        value = row.get(metric)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ResultsError(f"row {index} has {metric}={value!r}, expected a number")
        grouped.setdefault(class_key(row, config_columns), []).append(float(value))
    return {
        key: {"mean": sum(values) / len(values), "count": len(values)}
        for key, values in grouped.items()
    }
