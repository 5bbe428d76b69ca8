"""Child processes that a test interrupts with SIGINT, as Ctrl-C would.

A shell runs a background job with SIGINT ignored, and an ignored signal
stays ignored across exec: a suite started with `pytest &` would hand that
to every runner it starts, and Python then installs no KeyboardInterrupt
handler. A test of Ctrl-C starts its runner with SIGINT at its default, as a
terminal's foreground job has it, whatever the suite was started under.
"""

from __future__ import annotations

import signal


def as_foreground() -> None:
    """``preexec_fn`` for a child a test will interrupt: SIGINT back to its default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
