"""How each verdict looks: one palette shared by the plots, the page and the terminal."""

from __future__ import annotations

from kernelopt.decide import Verdict

KEPT = "kept"
DISCARDED = "discarded"
BROKEN = "failed"

# Kept work moves BEST; discarded work was measured and lost; broken work
# produced no trustworthy number. The plots draw the three differently.
GROUP_OF: dict[str, str] = {
    Verdict.BASELINE: KEPT,
    Verdict.KEEP: KEPT,
    Verdict.TIE: DISCARDED,
    Verdict.REGRESSION: DISCARDED,
    Verdict.DIVERGED: DISCARDED,
    Verdict.FAILED: BROKEN,
    Verdict.INCORRECT: BROKEN,
    Verdict.INTERRUPTED: BROKEN,
}

COLOUR: dict[str, str] = {
    Verdict.BASELINE: "#0e7490",
    Verdict.KEEP: "#16a34a",
    Verdict.TIE: "#9ca3af",
    Verdict.REGRESSION: "#dc2626",
    Verdict.DIVERGED: "#ea580c",
    Verdict.FAILED: "#ca8a04",
    Verdict.INCORRECT: "#c026d3",
    Verdict.INTERRUPTED: "#6b7280",
}
UNKNOWN_COLOUR = "#374151"

# rich style names for the `kernelopt log` table.
RICH_STYLE: dict[str, str] = {
    Verdict.BASELINE: "cyan",
    Verdict.KEEP: "bold green",
    Verdict.TIE: "dim",
    Verdict.REGRESSION: "red",
    Verdict.DIVERGED: "dark_orange",
    Verdict.FAILED: "yellow",
    Verdict.INCORRECT: "magenta",
    Verdict.INTERRUPTED: "dim yellow",
}


def group_of(verdict: str) -> str:
    return GROUP_OF.get(verdict, BROKEN)


def colour_of(verdict: str) -> str:
    return COLOUR.get(verdict, UNKNOWN_COLOUR)
