"""Device locks on a host, so two kernelopt runs never measure on one device.

A lock is a directory `<lock_dir>/<name>.lock` holding an `owner` file
("<machine> <pid> <start-ticks> <nonce>"). It is created complete in a scratch
directory and renamed into place: rename(2) onto an existing non-empty
directory fails, so exactly one racer wins and a lock never lacks its owner.
A lock whose owner process (on this machine) is gone, or whose pid was reused
by a process started later, is stale and is reaped. Owners on other machines
cannot be checked from here and are respected.
"""

from __future__ import annotations

import os
import shlex
import socket
import uuid
from dataclasses import dataclass

from kernelopt.hosts.base import Host, HostError
from kernelopt.hosts.children import process_start_ticks

DEFAULT_LOCK_DIR = "/tmp/kernelopt-locks"


@dataclass(frozen=True)
class LockOwner:
    machine: str
    pid: int
    start_ticks: int
    nonce: str

    def text(self) -> str:
        return f"{self.machine} {self.pid} {self.start_ticks} {self.nonce}"

    @classmethod
    def parse(cls, text: str) -> LockOwner | None:
        parts = text.split()
        if len(parts) != 4 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
            return None
        return cls(parts[0], int(parts[1]), int(parts[2]), parts[3])

    @classmethod
    def current(cls) -> LockOwner:
        pid = os.getpid()
        return cls(_machine(), pid, process_start_ticks(pid) or 0, uuid.uuid4().hex[:12])

    def is_dead(self) -> bool:
        """True only when we can tell: the owner ran on this machine and is gone."""
        if self.machine != _machine():
            return False
        started = process_start_ticks(self.pid)
        return started is None or (self.start_ticks != 0 and started != self.start_ticks)


def _machine() -> str:
    return socket.gethostname().replace(" ", "_") or "unknown"


class DeviceLock:
    """A held lock; `release()` removes it if it is still ours (idempotent)."""

    def __init__(self, host: Host, path: str, owner: LockOwner) -> None:
        self.host = host
        self.path = path
        self.owner = owner
        self.released = False

    def release(self) -> None:
        if self.released:
            return
        path, owner = shlex.quote(self.path), shlex.quote(self.owner.text())
        script = f'[ "$(cat {path}/owner 2>/dev/null)" = {owner} ] && rm -rf {path}; true'
        self.host.run(script, timeout=30)
        self.released = True

    def __repr__(self) -> str:
        return f"DeviceLock({self.host.name}:{self.path})"


def try_lock(host: Host, name: str, *, lock_dir: str = DEFAULT_LOCK_DIR) -> DeviceLock | None:
    """Take the lock `name` on `host`, reaping a stale one; None when it is held."""
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"invalid lock name {name!r}")
    owner = LockOwner.current()
    path = f"{lock_dir}/{name}.lock"
    for _ in range(2):
        if _create(host, lock_dir, path, owner):
            return DeviceLock(host, path, owner)
        holder = _read_owner(host, path)
        if holder is None or not holder.is_dead():
            return None
        _reap(host, lock_dir, path, holder)
    return None


def lock_holder(host: Host, name: str, *, lock_dir: str = DEFAULT_LOCK_DIR) -> LockOwner | None:
    return _read_owner(host, f"{lock_dir}/{name}.lock")


def _create(host: Host, lock_dir: str, path: str, owner: LockOwner) -> bool:
    scratch = f"{lock_dir}/.new-{owner.nonce}"
    d, s, p = shlex.quote(lock_dir), shlex.quote(scratch), shlex.quote(path)
    script = (
        f"mkdir -p {d} && mkdir {s} && printf '%s\\n' {shlex.quote(owner.text())} > {s}/owner"
        f" && if mv -T {s} {p} 2>/dev/null; then exit 0; else rm -rf {s}; exit 1; fi"
    )
    result = host.run(script, timeout=30)
    if result.returncode not in (0, 1):
        raise HostError(host.name, f"cannot create lock {path}: {result.stderr.strip()}")
    return result.returncode == 0


def _read_owner(host: Host, path: str) -> LockOwner | None:
    result = host.run(["cat", f"{path}/owner"], timeout=30)
    return LockOwner.parse(result.stdout) if result.ok else None


def _reap(host: Host, lock_dir: str, path: str, stale: LockOwner) -> None:
    """Move the stale lock aside, and put it back if it turned out not to be the
    stale one (another process reaped and re-locked in between)."""
    aside = shlex.quote(f"{lock_dir}/.reap-{uuid.uuid4().hex[:12]}")
    p = shlex.quote(path)
    script = (
        f"mv -T {p} {aside} 2>/dev/null || exit 0; "
        f'if [ "$(cat {aside}/owner 2>/dev/null)" = {shlex.quote(stale.text())} ]; '
        f"then rm -rf {aside}; else mv -T {aside} {p} 2>/dev/null || rm -rf {aside}; fi"
    )
    host.run(script, timeout=30)
