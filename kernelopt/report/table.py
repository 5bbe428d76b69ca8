"""`kernelopt log` as a compact, coloured table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelopt.decide import Verdict
from kernelopt.report.verdicts import RICH_STYLE

HYPOTHESIS_WIDTH = 60
ERROR_WIDTH = 80


def _metric(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{float(value):.4g}"


def _gain(value: Any, verdict: str) -> Text:
    """Coloured only where the gain decided something: a tie's +0.2% is noise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Text("")
    style = {Verdict.KEEP: "green", Verdict.REGRESSION: "red"}.get(verdict, "")
    return Text(f"{float(value) * 100:+.2f}%", style=style)


def _first_line(text: str, width: int) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def render_log_table(rows: Sequence[Mapping[str, Any]], console: Console) -> None:
    """Print one line per attempt, the verdict coloured; errors under their attempt.

    ``rows`` are the dicts `kernelopt log --json` prints (attempt, commit, kind,
    verdict, metric, gain, hypothesis, error; missing keys print empty).
    Text from notes is wrapped in ``Text`` so rich never reads it as markup.
    """
    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    table.add_column("#", justify="right")
    table.add_column("commit", style="dim")
    table.add_column("kind")
    table.add_column("verdict")
    table.add_column("metric", justify="right")
    table.add_column("gain", justify="right")
    table.add_column("hypothesis / error", overflow="fold")
    for row in rows:
        verdict = str(row.get("verdict", ""))
        style = RICH_STYLE.get(verdict, "")
        detail = Text(_first_line(str(row.get("hypothesis") or ""), HYPOTHESIS_WIDTH))
        error = str(row.get("error") or "")
        if error:
            detail.append("\n" + _first_line(error, ERROR_WIDTH), style="yellow")
        table.add_row(
            str(row.get("attempt", "")),
            Text(str(row.get("commit", ""))[:10]),
            Text(str(row.get("kind", ""))),
            Text(verdict, style=style),
            Text(_metric(row.get("metric"))),
            _gain(row.get("gain"), verdict),
            detail,
        )
    console.print(table)
