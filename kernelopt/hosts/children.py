"""Process groups this process started, so no benchmark outlives its runner.

Each local command runs in its own process group, so a timeout can kill it with
everything it started. The same isolation means a killed runner leaves its
benchmark running. So while a run is held, every group started is also listed
in a file beside the run lock, with the kernel's start time of its leader; the
next holder of the run lock kills what the list names before it measures
anything (the start time tells a leftover from an unrelated process that has
since been given the same pid). A runner that exits normally, or is
interrupted, kills its live groups itself.

A process group is not enough: a benchmark's daemon that calls ``setsid`` (or
``setpgid``) leaves the group, and no kill of the group reaches it. So every
command also carries a mark in its environment (``KERNELOPT_MEASUREMENT``),
which every descendant inherits whatever its group or session; when the
command ends, every process still carrying its mark is killed too (read from
``/proc``, so on Linux; elsewhere only the group is killed). The mark is listed
beside the group, so the next holder of a killed runner's lock finds those
daemons as well. A descendant that clears its own environment is out of reach
of the mark.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import signal
import threading
import time
from pathlib import Path

from kernelopt.files import write_atomically
from kernelopt.measurement import Fault

_lock = threading.Lock()
_live: dict[int, tuple[int, str]] = {}  # pgid -> (start ticks of its leader, its mark)
_record: Path | None = None
MARK = "KERNELOPT_MEASUREMENT"
_marks = itertools.count(1)
_PROC = Path("/proc")


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
        _write(strict=record is not None)


def new_mark() -> str:
    """A mark no other command of any process carries: put it in the command's
    environment under ``MARK`` (with ``marked_env``) and pass it to ``started``."""
    return f"{os.getpid()}.{process_start_ticks(os.getpid()) or 0}.{next(_marks)}"


def marked_env(mark: str) -> str:
    """The value of ``MARK`` for a command marked ``mark``: the marks of the commands
    this process runs under come first, so killing any of them reaches it too."""
    outer = os.environ.get(MARK, "")
    return f"{outer}/{mark}" if outer else mark


def started(pgid: int, mark: str = "") -> None:
    with _lock:
        _live[pgid] = (process_start_ticks(pgid) or 0, mark)
        _write(strict=True)


def ended(pgid: int) -> None:
    with _lock:
        _live.pop(pgid, None)
        _write()


def kill_live() -> None:
    """Kill every group this process started that is still running, and their daemons."""
    with _lock:
        live = dict(_live)
        _live.clear()
    for pgid, (_, mark) in live.items():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        if mark:
            kill_marked(mark)
    with _lock:
        _write()


def marked(mark: str) -> list[int]:
    """The live processes carrying ``mark`` in their environment (Linux /proc; else none)."""
    key = f"\0{MARK}=".encode()
    wanted = mark.encode()
    me = os.getpid()
    found = []
    try:
        entries = os.listdir(_PROC)
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                env = b"\0" + fh.read()
        except OSError:
            continue  # gone, or another user's (our descendants are ours)
        at = env.find(key)
        if at >= 0 and wanted in env[at + len(key) :].split(b"\0", 1)[0].split(b"/"):
            found.append(int(entry))
    return found


def kill_marked(mark: str, *, patience_s: float = 2.0) -> list[int]:
    """SIGKILL every process carrying ``mark`` until none is left (one may be forking).

    None is left only when two scans in a row, a few milliseconds apart, find none:
    a process in the middle of ``execve`` can show an empty environment for a moment,
    so one empty scan can miss a daemon that is exec-ing its long-running program.
    """
    killed: list[int] = []
    deadline = time.monotonic() + patience_s
    empty_scans = 0
    while empty_scans < 2:
        pids = marked(mark)
        empty_scans = 0 if pids else empty_scans + 1
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        _reap(pids)
        if time.monotonic() > deadline:
            break
        time.sleep(0.005)
    return killed


def _reap(pids: list[int]) -> None:
    """Collect killed processes that were our own children, so no zombie stays."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def reap(record: Path) -> list[int]:
    """Kill the groups a previous holder listed in ``record`` and left running."""
    try:
        lines = record.read_text().split()
    except OSError:
        return []
    killed = []
    for line in lines:
        pgid_text, _, rest = line.partition(":")
        started_text, _, mark = rest.partition(":")
        if not (pgid_text.isdigit() and started_text.isdigit()):
            continue
        pgid, started_at = int(pgid_text), int(started_text)
        if mark:  # daemons that left the group carry the mark
            killed += kill_marked(mark)
        if pgid == os.getpgrp() or not started_at or process_start_ticks(pgid) != started_at:
            continue  # gone, start unknown, or the pid now belongs to another process
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
            killed.append(pgid)
    with contextlib.suppress(OSError):
        record.write_text("")
    return killed


def _write(strict: bool = False) -> None:
    """Rewrite the list; a failure is a Fault when ``strict`` (a group is being added)."""
    if _record is None:
        return
    try:
        write_atomically(
            _record, "".join(f"{pgid}:{at}:{mark}\n" for pgid, (at, mark) in _live.items())
        )
    except OSError as exc:  # the list is what kills a killed runner's leftovers: required
        if strict:
            raise Fault(f"cannot list the run's benchmarks in {_record}: {exc}") from None


atexit.register(kill_live)
