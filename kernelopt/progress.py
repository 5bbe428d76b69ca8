"""Throttled reports of how far a long screen is, for people (``output.ScreenProgress``)
and for a run's reporter (``proposers.first.ScreenEvents``)."""

from __future__ import annotations

import time
from collections.abc import Callable


class ScreenTicker:
    """How far a screen is, at most every ``EVERY`` seconds (``ir.start.initial_state``
    and ``proposers.first.first_batch`` take one): its ``drawing`` hears the pool's draws
    kept, the ticker itself the states simulated; ``emit`` hears (phase "drawing" or
    "simulating", done, total, seconds since the start)."""

    EVERY = 5.0  # seconds between reports

    def __init__(self, emit: Callable[[str, int, int, float], None]) -> None:
        self.emit = emit
        self.started = self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        self._tick("simulating", done, total)

    def drawing(self, drawn: int, wanted: int) -> None:
        self._tick("drawing", drawn, wanted)

    def _tick(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.EVERY:
            self.last = now
            self.emit(phase, done, total, now - self.started)
