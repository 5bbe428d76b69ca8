"""Human durations ("30s", "10m", "1h30m") as seconds."""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_duration(text: str | int | float, *, what: str = "duration") -> float:
    """Return the number of seconds in `text`.

    Accepts a bare number (seconds) or number+unit parts in any order of size,
    e.g. "45", "30s", "10m", "1h30m", "1.5h", "250ms". `what` names the setting
    in the error message so the user knows which value to fix.
    """
    if isinstance(text, bool):
        raise ValueError(f"invalid {what} {text!r}: expected e.g. '30s', '10m' or '1h30m'")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        cleaned = text.strip().lower().replace(" ", "")
        seconds = _parse_text(cleaned, original=text, what=what)
    if seconds < 0:
        raise ValueError(f"invalid {what} {text!r}: must not be negative")
    return seconds


def _parse_text(cleaned: str, *, original: str, what: str) -> float:
    if not cleaned:
        raise ValueError(f"invalid {what} {original!r}: empty; expected e.g. '30s', '10m', '1h30m'")
    try:
        return float(cleaned)
    except ValueError:
        pass
    total = 0.0
    position = 0
    for match in _PART.finditer(cleaned):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position != len(cleaned) or position == 0:
        raise ValueError(
            f"invalid {what} {original!r}: expected a number of seconds or number+unit "
            "parts with units ms, s, m, h, d (e.g. '30s', '10m', '1h30m')"
        )
    return total


def format_duration(seconds: float) -> str:
    """The inverse of parse_duration for display: 5400 -> '1h30m'."""
    if seconds < 60 and seconds != int(seconds):
        return f"{seconds:g}s"
    remaining = int(round(seconds))
    parts = []
    for unit, size in (("h", 3600), ("m", 60), ("s", 1)):
        count, remaining = divmod(remaining, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
