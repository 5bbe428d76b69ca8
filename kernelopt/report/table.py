"""`kernelopt log` as a compact, coloured table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelopt.decide import Verdict
from kernelopt.hypothesis import cut_words
from kernelopt.report.verdicts import RICH_STYLE

ERROR_WIDTH = 200
TAIL_SHOWN = 6  # last lines of a failed benchmark's output under its row


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


def compared_with(row: Mapping[str, Any]) -> str:
    """The BEST figure a verdict was decided on: ``100 (3 pairs)`` when BEST was
    re-measured beside the candidate, else BEST's figure; empty for a baseline."""
    basis = row.get("basis") or {}
    if basis.get("against") == "remeasured":
        pairs = int(basis.get("pairs") or 0)
        return f"{_metric(basis.get('best'))} ({pairs} pair{'s' if pairs != 1 else ''})"
    if row.get("gain") is None or row.get("verdict") == Verdict.BASELINE:
        return ""
    return _metric(basis.get("best", row.get("previous_best")))


def _first_line(text: str, width: int) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else cut_words(line, width)


def render_log_table(
    rows: Sequence[Mapping[str, Any]], console: Console, *, wide: bool = False
) -> None:
    """Print one line per attempt, the verdict coloured; errors under their attempt.

    ``rows`` are the dicts `kernelopt log --json` prints (attempt, commit, kind,
    verdict, metric, basis, gain, hypothesis, error, output_tail; missing keys
    print empty). Rows never wrap: the text is cut at a word to the console's
    width (80 columns when piped) unless ``wide``, which also shows each
    verdict's reason. Text from notes is wrapped in ``Text`` so rich never
    reads it as markup.
    """
    headers = ["#", "commit", *(["kind"] if wide else []), "verdict", "metric", "vs BEST", "gain"]
    fixed: list[list[Text]] = []
    for row in rows:
        verdict = str(row.get("verdict", ""))
        fixed.append(
            [
                Text(str(row.get("attempt", ""))),
                Text(str(row.get("commit", ""))[:10], style="dim"),
                *([Text(str(row.get("kind", "")))] if wide else []),
                Text(verdict, style=RICH_STYLE.get(verdict, "")),
                Text(_metric(row.get("metric"))),
                Text(compared_with(row)),
                _gain(row.get("gain"), verdict),
            ]
        )
    widths = [max([len(h), *(cells[i].cell_len for cells in fixed)]) for i, h in enumerate(headers)]
    # What is left of the line for the hypothesis (one space between columns).
    room = max(console.width - sum(widths) - len(widths), 20)
    table = Table(
        box=None, pad_edge=False, header_style="bold", show_edge=False, padding=(0, 1, 0, 0)
    )
    for header, width in zip(headers, widths, strict=True):
        right = header in ("#", "metric", "vs BEST", "gain")
        table.add_column(
            header, justify="right" if right else "left", min_width=width, no_wrap=True
        )
    table.add_column("hypothesis / error", no_wrap=not wide, overflow="fold")

    def cut(text: str) -> str:
        return text if wide else cut_words(text, room)

    for row, cells in zip(rows, fixed, strict=True):
        verdict = str(row.get("verdict", ""))
        detail = Text(cut(str(row.get("hypothesis") or "").strip().replace("\n", " ")))
        if wide and row.get("reason") and verdict != Verdict.BASELINE:
            detail.append("\nwhy: " + str(row["reason"]), style="dim")
        error = str(row.get("error") or "")
        if error:
            detail.append("\n" + cut(_first_line(error, ERROR_WIDTH)), style="yellow")
        tail = [t for t in str(row.get("output_tail") or "").splitlines() if t.strip()]
        if tail and tail[-1].strip() != error.strip():
            for line in tail[-TAIL_SHOWN:]:
                detail.append("\n" + cut("| " + line[:ERROR_WIDTH]), style="yellow")
        table.add_row(*cells, detail)
    console.print(table, crop=not wide)
