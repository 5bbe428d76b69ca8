"""How each verdict looks: one palette shared by the plots, the page and the terminal."""

from __future__ import annotations

from kernelopt.decide import (
    BASELINE,
    DIVERGED,
    FAILED,
    INCORRECT,
    INTERRUPTED,
    KEEP,
    REGRESSION,
    TIE,
)

KEPT = "kept"
DISCARDED = "discarded"
BROKEN = "failed"

# Kept work moves BEST; discarded work was measured and lost; broken work
# produced no trustworthy number. The plots draw the three differently.
GROUP_OF: dict[str, str] = {
    BASELINE: KEPT,
    KEEP: KEPT,
    TIE: DISCARDED,
    REGRESSION: DISCARDED,
    DIVERGED: DISCARDED,
    FAILED: BROKEN,
    INCORRECT: BROKEN,
    INTERRUPTED: BROKEN,
}

COLOUR: dict[str, str] = {
    BASELINE: "#0e7490",
    KEEP: "#16a34a",
    TIE: "#9ca3af",
    REGRESSION: "#dc2626",
    DIVERGED: "#ea580c",
    FAILED: "#ca8a04",
    INCORRECT: "#c026d3",
    INTERRUPTED: "#6b7280",
}
UNKNOWN_COLOUR = "#374151"

# rich style names for the `kernelopt log` table.
RICH_STYLE: dict[str, str] = {
    BASELINE: "cyan",
    KEEP: "bold green",
    TIE: "dim",
    REGRESSION: "red",
    DIVERGED: "dark_orange",
    FAILED: "yellow",
    INCORRECT: "magenta",
    INTERRUPTED: "dim yellow",
}


def group_of(verdict: str) -> str:
    return GROUP_OF.get(verdict, BROKEN)


def colour_of(verdict: str) -> str:
    return COLOUR.get(verdict, UNKNOWN_COLOUR)
