"""Running a tool, or a step (``python -m kernelopt.neuron.steps``), in its own
process group, and reading the record a step prints."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.neuron.steps import MARK as STEP_MARK

# The longest an error message in a record gets; the full text is in the log file.
_ERROR_CHARS = 4000


@dataclass(frozen=True)
class Finished:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


def run(
    argv: Sequence[str],
    env: Mapping[str, str],
    timeout: float | None,
    cwd: Path | None = None,
) -> Finished:
    """Run a tool in its own process group; a timeout kills the whole group."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return Finished(127, "", f"{argv[0]}: {exc.strerror}", False, 0.0)
    try:
        out, err = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = process.communicate()
        timed_out = True
    return Finished(process.returncode, out, err, timed_out, time.monotonic() - started)


def tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _ERROR_CHARS else "..." + text[-_ERROR_CHARS:]


def python_step(step: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "kernelopt.neuron.steps", step, *args]


def step_record(done: Finished) -> dict[str, Any] | None:
    """The JSON a step printed on its KERNELOPT-STEP line, if any."""
    for line in reversed(done.stdout.strip().splitlines()):
        if line.startswith(STEP_MARK):
            try:
                record = json.loads(line[len(STEP_MARK) :])
            except json.JSONDecodeError:
                return None
            return record if isinstance(record, dict) else None
    return None
