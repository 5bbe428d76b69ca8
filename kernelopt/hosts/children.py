"""Process groups this process started, so no benchmark outlives its runner.

Each local command runs in its own process group, so a timeout can kill it with
everything it started. The same isolation means a killed runner leaves its
benchmark running. So while a run is held, every group started is also listed
in a file beside the run lock, with the kernel's start time of its leader; the
next holder of the run lock kills what the list names before it measures
anything (the start time tells a leftover from an unrelated process that has
since been given the same pid). A runner that exits normally, or is
interrupted, kills its live groups itself.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from pathlib import Path

from kernelopt.files import write_atomically

_lock = threading.Lock()
_live: dict[int, int] = {}  # pgid -> start time of its leader (clock ticks since boot)
_record: Path | None = None


def process_start_ticks(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot; None when it does not exist."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return 0  # exists but unreadable: alive, start unknown
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else 0


def track(record: Path | None) -> None:
    """List the groups started from now on in ``record`` (None: stop listing)."""
    global _record
    with _lock:
        _record = record
        _write()


def started(pgid: int) -> None:
    with _lock:
        _live[pgid] = process_start_ticks(pgid) or 0
        _write()


def ended(pgid: int) -> None:
    with _lock:
        _live.pop(pgid, None)
        _write()


def kill_live() -> None:
    """Kill every group this process started that is still running."""
    with _lock:
        for pgid in list(_live):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        _live.clear()
        _write()


def reap(record: Path) -> list[int]:
    """Kill the groups a previous holder listed in ``record`` and left running."""
    try:
        lines = record.read_text().split()
    except OSError:
        return []
    killed = []
    for line in lines:
        pgid_text, _, started_text = line.partition(":")
        if not (pgid_text.isdigit() and started_text.isdigit()):
            continue
        pgid, started_at = int(pgid_text), int(started_text)
        if pgid == os.getpgrp() or not started_at or process_start_ticks(pgid) != started_at:
            continue  # gone, start unknown, or the pid now belongs to another process
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
            killed.append(pgid)
    with contextlib.suppress(OSError):
        record.write_text("")
    return killed


def _write() -> None:
    if _record is None:
        return
    write_atomically(_record, "".join(f"{pgid}:{at}\n" for pgid, at in _live.items()))


atexit.register(kill_live)
