"""Pieces of the report page: formatted numbers, escaped cells, tables and figures.

Every function here returns HTML with note text already passed through
``html.escape``, so the page's layout code never handles raw user text.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from kernelopt.decide import Verdict
from kernelopt.report.verdicts import colour_of

ERROR_PREVIEW = 160


def fmt_metric(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if 1e4 <= abs(value) < 1e12:
        return f"{value:,.0f}"  # 25,960 reads better than 2.596e+04
    return f"{value:.4g}"


def fmt_gain(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value * 100:+.2f}%"


def gain_class(value: float | None, verdict: str | None = None) -> str:
    """Green or red where the gain decided something; a tie's small gain stays plain."""
    if value is None or math.isnan(value) or value == 0:
        return ""
    if verdict is not None and verdict not in (Verdict.KEEP, Verdict.REGRESSION):
        return ""
    return "good" if value > 0 else "bad"


def img(path: Path, alt: str, out: Path, embed: bool, caption: str = "") -> str:
    if embed:
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        src = f"data:image/png;base64,{data}"
    else:
        src = path.relative_to(out).as_posix()
    note = f"<figcaption>{escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{escape(src)}" alt="{escape(alt)}">{note}</figure>'


def table(headers: Sequence[tuple[str, bool]], rows: Iterable[Sequence[str]]) -> str:
    """Rows of already-escaped cells; headers are (text, numeric)."""
    head = "".join(f"<th{' class=num' if num else ''}>{escape(h)}</th>" for h, num in headers)
    body = []
    for row in rows:
        cells = "".join(
            f"<td{' class=num' if num else ''}>{cell}</td>"
            for cell, (_, num) in zip(row, headers, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def badge(verdict: str) -> str:
    return f'<span class="badge" style="background:{colour_of(verdict)}">{escape(verdict)}</span>'


def commit(sha: str) -> str:
    return f'<code title="{escape(sha)}">{escape(sha[:10])}</code>'


def error_cell(error: str, log_tail: str = "") -> str:
    """The error's first line; the whole error and the log tail one click away."""
    if not error and not log_tail:
        return ""
    lines = error.strip().splitlines()
    first = lines[0] if lines else "(see the log tail)"
    preview = first[:ERROR_PREVIEW] + ("..." if len(first) > ERROR_PREVIEW else "")
    if preview == error.strip() and not log_tail:
        return f'<span class="err">{escape(preview)}</span>'
    detail = escape(error.strip())
    if log_tail:
        detail += "\n\n" if detail else ""
        detail += escape(log_tail.strip())
    return f'<details class="err"><summary>{escape(preview)}</summary><pre>{detail}</pre></details>'


def gain_cell(value: float | None, verdict: str | None = None) -> str:
    text = fmt_gain(value)
    cls = gain_class(value, verdict)
    return f'<span class="{cls}">{escape(text)}</span>' if cls else escape(text)


def as_float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None
