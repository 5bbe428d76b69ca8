"""Waiting for an idle device and leasing it (the availability gate).

Rule: survey every host; take the most idle unlocked device; if there is none,
wait `poll_s` and look again; after `max_wait_s` give up with NoIdleDevice,
which stops the run. Never preempt a busy device.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernelopt.devices.base import DeviceStatus, Gate, GateError
from kernelopt.devices.locks import DEFAULT_LOCK_DIR, DeviceLock, try_lock
from kernelopt.hosts.base import Host, HostError


@dataclass(frozen=True)
class Lease:
    """A device held for measuring. Use `binding` as the command's env; release
    when done (also as a context manager)."""

    host: Host
    status: DeviceStatus
    lock: DeviceLock

    @property
    def device(self) -> str:
        return f"{self.status.kind}:{self.status.device}"

    @property
    def binding(self) -> dict[str, str]:
        return dict(self.status.binding)

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(frozen=True)
class NoIdleDevice:
    """No device became idle in time (or the gate cannot work): stop the run."""

    reason: str
    waited_s: float
    statuses: tuple[DeviceStatus, ...] = ()


@dataclass(frozen=True)
class WaitNotice:
    """Passed to on_wait before each sleep, for progress output."""

    reason: str
    waited_s: float
    next_poll_s: float


def acquire(
    gate: Gate,
    hosts: Sequence[Host],
    *,
    poll_s: float = 600.0,
    max_wait_s: float = 3600.0,
    lock_dir: str = DEFAULT_LOCK_DIR,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_wait: Callable[[WaitNotice], None] | None = None,
) -> Lease | NoIdleDevice:
    """One lease on the most idle device of any host, or NoIdleDevice."""
    found = acquire_many(
        gate,
        hosts,
        count=1,
        poll_s=poll_s,
        max_wait_s=max_wait_s,
        lock_dir=lock_dir,
        clock=clock,
        sleep=sleep,
        on_wait=on_wait,
    )
    return found if isinstance(found, NoIdleDevice) else found[0]


def acquire_many(
    gate: Gate,
    hosts: Sequence[Host],
    *,
    count: int | None = None,
    poll_s: float = 600.0,
    max_wait_s: float = 3600.0,
    lock_dir: str = DEFAULT_LOCK_DIR,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_wait: Callable[[WaitNotice], None] | None = None,
) -> list[Lease] | NoIdleDevice:
    """Up to `count` leases (all idle devices when None), most idle first, as
    soon as at least one device is free; waits like `acquire` otherwise."""
    if not hosts:
        raise ValueError("acquire needs at least one host")
    if poll_s <= 0:
        raise ValueError(f"poll interval must be positive, got {poll_s}")
    started = clock()
    while True:
        statuses, problems, broken = _survey(gate, hosts)
        if broken:
            # Every host failed with a tool/format problem: waiting will not fix it.
            return NoIdleDevice("; ".join(problems), clock() - started, tuple(statuses))
        leases, locked = _lease_idle(statuses, hosts, count, lock_dir)
        if leases:
            return leases
        reason = _why_none(statuses, locked, problems)
        waited = clock() - started
        if waited >= max_wait_s:
            return NoIdleDevice(
                f"no idle device after waiting {waited:.0f}s: {reason}", waited, tuple(statuses)
            )
        pause = min(poll_s, max_wait_s - waited)
        if on_wait is not None:
            on_wait(WaitNotice(reason, waited, pause))
        sleep(pause)


def _survey(gate: Gate, hosts: Sequence[Host]) -> tuple[list[DeviceStatus], list[str], bool]:
    statuses: list[DeviceStatus] = []
    problems: list[str] = []
    gate_errors = 0
    for host in hosts:
        try:
            statuses.extend(gate.survey(host))
        except GateError as error:
            gate_errors += 1
            problems.append(str(error))
        except HostError as error:  # unreachable now, maybe back later: keep waiting
            problems.append(str(error))
    return statuses, problems, gate_errors == len(hosts)


def _lease_idle(
    statuses: list[DeviceStatus], hosts: Sequence[Host], count: int | None, lock_dir: str
) -> tuple[list[Lease], list[DeviceStatus]]:
    by_name = {host.name: host for host in hosts}
    order = {name: position for position, name in enumerate(by_name)}
    idle = sorted(
        (s for s in statuses if s.idle),
        key=lambda s: (s.utilization or 0.0, s.memory_used or 0.0, order[s.host]),
    )
    leases: list[Lease] = []
    locked: list[DeviceStatus] = []
    for status in idle:
        if count is not None and len(leases) >= count:
            break
        host = by_name[status.host]
        lock = try_lock(host, f"{status.kind}-{status.device}", lock_dir=lock_dir)
        if lock is None:
            locked.append(status)
        else:
            leases.append(Lease(host=host, status=status, lock=lock))
    return leases, locked


def _why_none(statuses: list[DeviceStatus], locked: list[DeviceStatus], problems: list[str]) -> str:
    parts = [f"{s.host}:{s.device} busy ({s.reason})" for s in statuses if not s.idle]
    parts += [f"{s.host}:{s.device} locked by another kernelopt run" for s in locked]
    parts += problems
    return "; ".join(parts) or "no devices found"
