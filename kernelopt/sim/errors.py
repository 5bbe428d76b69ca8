"""The one error the simulator raises: where in the kernel, and which rule broke."""

from __future__ import annotations

KINDS = ("isa", "capacity", "numerics", "exception")


class SimError(Exception):
    """A kernel that breaks an ISA rule, runs out of on-chip memory, reads
    uninitialised memory, or raises.

    ``file`` and ``line`` point into the kernel source (line 0 when no kernel
    line applies, e.g. a missing input); ``kind`` is one of ``KINDS``.
    """

    def __init__(self, message: str, *, file: str, line: int, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown SimError kind {kind!r}; expected one of {KINDS}")
        self.message = message
        self.file = file
        self.line = line
        self.kind = kind
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}")
