"""The one record every measurement produces, whatever the device.

Failures are data: a crash, a timeout or a wrong answer is a Measurement with
a status and the error text, never an exception through the loop.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

OK = "ok"
FAILED = "failed"
INCORRECT = "incorrect"
TIMEOUT = "timeout"
INTERRUPTED = "interrupted"
REFUSED = "refused"  # not measured: the candidate changed what the rules fix
# Not measured: nothing on this device can build it (a compiler-baseline row without its
# compiler); a reason, not a failure of anything the run tried.
SKIPPED = "skipped"
STATUSES = (OK, FAILED, INCORRECT, TIMEOUT, INTERRUPTED, REFUSED, SKIPPED)


class Fault(Exception):
    """kernelopt's own storage, lock or host failed: no verdict on the candidate.

    Not an OSError or RuntimeError, so no target turns it into a failed
    measurement: it goes up to the command, which says so and exits
    ``EXIT_FAULT``; the attempt stays committed and undecided (pending), and
    the next ``run`` or ``try`` measures it.
    """


@dataclass(frozen=True)
class Measurement:
    """What one run of a target on one commit produced.

    ``metrics`` holds the aggregate numbers (the program's metric among them);
    ``rows`` the per-config rows when the target reports several configs;
    ``profile`` the profiler-shaped record (neuron-profile field names, percent
    fields in 0-100) where the device has one.
    """

    status: str
    metrics: dict[str, float] = field(default_factory=dict)
    rows: tuple[dict[str, Any], ...] = ()
    profile: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    log_tail: str = ""
    device: str = ""
    host: str = ""
    duration_s: float = 0.0
    deterministic: bool = False
    artifacts: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown measurement status {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status == OK

    def value(self, key: str) -> float | None:
        """The number called ``key`` among the metrics, else in the profile; None if absent."""
        for source in (self.metrics, self.profile):
            found = source.get(key)
            if isinstance(found, (int, float)) and not isinstance(found, bool):
                return float(found)
        return None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rows"] = list(self.rows)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Measurement:
        known = {f for f in cls.__dataclass_fields__}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["rows"] = tuple(kwargs.get("rows", ()))
        return cls(**kwargs)

    @classmethod
    def failure(cls, status: str, error: str, **kw: Any) -> Measurement:
        return cls(status=status, error=error, **kw)
