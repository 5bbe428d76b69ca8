"""SIGTERM and SIGHUP end a runner the way Ctrl-C does.

A service manager stopping a job, a closed terminal or ``kill <pid>`` sends
SIGTERM or SIGHUP, whose default action ends Python at once: no attempt
recorded, no ``finally`` run, and a benchmark in its own process group keeps
running. Inside ``as_interrupts`` those signals raise ``Terminated``, a
KeyboardInterrupt, so the same path as Ctrl-C records the attempt in flight as
interrupted and kills the benchmark's process tree. The first signal is
enough: later ones are ignored while that record is written (SIGKILL still
ends the process, and the next run finishes what it left).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """The runner received SIGTERM or SIGHUP."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def reason(exc: BaseException) -> str:
    """What interrupted the runner, as an attempt's error says it."""
    if isinstance(exc, Terminated):
        return f"interrupted by {exc.name}"
    return "interrupted by the user (Ctrl-C)"


def exit_code(exc: BaseException, default: int) -> int:
    """128 + the signal's number for a signal (the shell's convention), else ``default``."""
    return 128 + exc.signum if isinstance(exc, Terminated) else default


@contextlib.contextmanager
def as_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise ``Terminated`` (main thread only)."""
    fired: list[int] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        if fired:
            return  # already stopping: let the record be written
        fired.append(signum)
        raise Terminated(signum)

    try:
        previous = {sig: signal.signal(sig, handler) for sig in HANDLED}
    except ValueError:  # not the main thread: signals are not ours to take
        yield
        return
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
