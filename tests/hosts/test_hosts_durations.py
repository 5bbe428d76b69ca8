from __future__ import annotations

import pytest

from kernelopt.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("10m", 600),
        ("1h", 3600),
        ("1h30m", 5400),
        ("90", 90),
        (45, 45),
        ("1.5h", 5400),
        ("250ms", 0.25),
        (" 2m 5s ", 125),
        ("1d", 86400),
    ],
)
def test_parses(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "10x", "1h30", "h", "m10", "-5", "1h-5m"])
def test_rejects_with_the_setting_named(text: str) -> None:
    with pytest.raises(ValueError, match=r"invalid device\.poll"):
        parse_duration(text, what="device.poll")


def test_round_trip_for_display() -> None:
    for seconds in (30, 600, 5400, 3661):
        assert parse_duration(format_duration(seconds)) == seconds
