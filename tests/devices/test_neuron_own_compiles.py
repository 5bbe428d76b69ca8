"""A compile kernelopt is running on a host is not a leftover compiler; an orphan is.

Both processes here are real and named like the compiler, and neither is a child of
this test (each is re-parented away, as on a host the run reaches over SSH): one
still has a kernelopt driver step above it, the other lost its parent.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fake_tools import FakeTools, neuron_device

from kernelopt.devices.neuron import NeuronGate
from kernelopt.devices.own_compiles import in_flight
from kernelopt.hosts import LocalHost

# These tests put stand-in compilers in the machine's process table: no other test runs
# meanwhile (tests/conftest.py).
pytestmark = pytest.mark.process_table_to_itself


def _compiler(folder: Path, under_driver: bool, parent: str = "") -> tuple[int, int]:
    """(pid of a `neuronx-cc compile` process, its session id), started away from this
    test; with ``under_driver`` its parent is named as kernelopt's compile step, else
    as ``parent`` when given."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "neuronx-cc"
    script.write_text("#!/bin/sh\nsleep 20\n")
    script.chmod(0o755)
    run = f'"{script}" compile k.json & echo $! > "{folder}/pid"; wait'
    if under_driver:
        # The parent's command line is a driver step's, as on a Neuron host.
        run = f"exec -a 'python -m kernelopt.neuron.steps compile' bash -c {run!r}"
    elif parent:
        run = f"exec -a {shlex.quote(parent)} bash -c {shlex.quote(run)}"
    started = subprocess.Popen(["bash", "-c", f"({run}) >/dev/null 2>&1 &"], start_new_session=True)
    started.wait()
    deadline = time.monotonic() + 5
    while not (folder / "pid").exists() or not (folder / "pid").read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pid = int((folder / "pid").read_text())
    return pid, os.getsid(pid)


def test_a_compile_under_a_kernelopt_step_is_not_a_leftover(
    fakes: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ps reads $COLUMNS even into a pipe: a narrow one must not cut the driver step's
    # name out of its parent's command line.
    monkeypatch.setenv("COLUMNS", "20")
    fakes.set("neuron", devices=[neuron_device(0)])
    ours, session_ours = _compiler(tmp_path / "ours", under_driver=True)
    orphan, session_orphan = _compiler(tmp_path / "orphan", under_driver=False)
    try:
        time.sleep(0.3)
        assert in_flight(LocalHost(), [ours, orphan], timeout=20) == frozenset({ours})
        table = f"ps -ww -o pid=,args= -s {session_ours},{session_orphan} || true"
        gate = NeuronGate(search_path=[str(fakes.bin_dir)], process_table=table)
        (status,) = gate.survey(LocalHost())
        assert not status.idle and f"(pid {orphan})" in status.reason
        assert f"(pid {ours})" not in status.reason
    finally:
        for session in (session_ours, session_orphan):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(session, signal.SIGTERM)


def test_an_ancestor_with_unbalanced_quotes_does_not_stop_the_gate(
    fakes: FakeTools, tmp_path: Path
) -> None:
    """A parent's command line is arbitrary text: an unmatched quote in it must neither
    raise nor hide the orphan it belongs to."""
    fakes.set("neuron", devices=[neuron_device(0)])
    orphan, session = _compiler(tmp_path / "odd", under_driver=False, parent='runner it\'s "odd"')
    try:
        time.sleep(0.3)
        assert in_flight(LocalHost(), [orphan], timeout=20) == frozenset()
        gate = NeuronGate(
            search_path=[str(fakes.bin_dir)],
            process_table=f"ps -ww -o pid=,args= -s {session} || true",
        )
        (status,) = gate.survey(LocalHost())
        assert not status.idle and f"(pid {orphan})" in status.reason
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(session, signal.SIGTERM)
