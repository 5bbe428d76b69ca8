"""The coloured `kernelopt log` table, rendered by a real rich console."""

from __future__ import annotations

import io
import re

from rich.console import Console

from kernelopt.report.table import render_log_table

ROWS = [
    {"attempt": 0, "commit": "a" * 40, "kind": "baseline", "verdict": "baseline",
     "metric": 150.0, "gain": None, "hypothesis": "measure the unmodified code", "error": ""},
    {"attempt": 1, "commit": "b" * 40, "kind": "knob", "verdict": "keep",
     "metric": 120.0, "gain": 0.2, "hypothesis": "[bold]tiles[/bold] of 64", "error": ""},
    {"attempt": 2, "commit": "c" * 40, "kind": "edit", "verdict": "regression",
     "metric": 130.0, "gain": -0.0833, "hypothesis": "column order", "error": ""},
    {"attempt": 3, "commit": "d" * 40, "kind": "edit", "verdict": "tie",
     "metric": 119.5, "gain": 0.004, "hypothesis": "unroll", "error": ""},
    {"attempt": 4, "commit": "e" * 40, "kind": "edit", "verdict": "failed",
     "metric": None, "gain": None, "hypothesis": "bigger buffers",
     "error": "command exited with status 1\nTraceback ..."},
    {"attempt": 5, "commit": "f" * 40, "kind": "agent", "verdict": "incorrect",
     "metric": None, "gain": None, "hypothesis": "skip the edge", "error": "err == 0 failed"},
]  # fmt: skip


# SGR codes of the standard 8-colour palette, as a terminal receives them.
SGR = {"dim": "2", "red": "31", "green": "32", "yellow": "33", "magenta": "35", "cyan": "36"}


def sgr_codes(rows: list[dict[str, object]]) -> dict[str, set[str]]:
    """Each styled piece of text and every SGR code it was printed with."""
    out = io.StringIO()
    console = Console(file=out, width=140, force_terminal=True, color_system="standard")
    render_log_table(rows, console)
    found: dict[str, set[str]] = {}
    for codes, text in re.findall(r"\x1b\[([\d;]+)m([^\x1b]+)", out.getvalue()):
        found.setdefault(text.strip(), set()).update(codes.split(";"))
    return found


def test_every_attempt_is_one_row_with_its_short_commit() -> None:
    recorder = Console(record=True, width=140, file=io.StringIO())
    render_log_table(ROWS, recorder)
    text = recorder.export_text()
    for row in ROWS:
        assert str(row["commit"])[:10] in text
        assert str(row["commit"])[:11] not in text
    assert "+20.00%" in text and "-8.33%" in text and "n/a" in text
    assert "command exited with status 1" in text and "Traceback" not in text
    assert "[bold]tiles[/bold] of 64" in text  # note text is never read as markup


def test_verdicts_have_their_colours() -> None:
    codes = sgr_codes(ROWS)
    expected = {
        "keep": "green",
        "regression": "red",
        "tie": "dim",
        "failed": "yellow",
        "incorrect": "magenta",
        "baseline": "cyan",
        "+20.00%": "green",
        "-8.33%": "red",
    }
    for text, colour in expected.items():
        assert SGR[colour] in codes[text], (text, codes.get(text))
    # a tie's gain is noise: printed, but not in a winning colour
    assert not {SGR["green"], SGR["red"]} & codes.get("+0.40%", set())


def test_rows_with_missing_fields_still_render() -> None:
    recorder = Console(record=True, width=100, file=io.StringIO())
    render_log_table([{"attempt": 7, "verdict": "interrupted"}], recorder)
    assert "interrupted" in recorder.export_text()


def test_rows_never_wrap_at_80_columns_and_cut_at_a_word() -> None:
    long = (
        "tile the inner loop by sixty four so that the working set stays in the first level cache"
    )
    rows = [
        {
            **ROWS[1],
            "hypothesis": long,
            "basis": {"against": "remeasured", "pairs": 7, "best": 24.95},
        },
        {**ROWS[4], "output_tail": "Traceback (most recent call last):\nZeroDivisionError: x"},
    ]
    console = Console(record=True, width=80, file=io.StringIO())
    render_log_table(rows, console)
    lines = console.export_text().rstrip("\n").splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), lines
    keep = next(line for line in lines if "keep" in line)
    assert "24.95 (7 pairs)" in keep
    cut = keep.rstrip().rsplit("  ", 1)[-1].split("+20.00% ")[-1]
    assert cut.endswith("...") and long.startswith(cut[:-3]) and long[len(cut) - 3] == " "
    assert any("ZeroDivisionError: x" in line for line in lines)
    wide = Console(record=True, width=4000, file=io.StringIO())
    render_log_table(rows, wide, wide=True)
    assert long in wide.export_text()
