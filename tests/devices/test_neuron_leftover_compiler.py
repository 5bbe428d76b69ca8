"""Busy means busy: a leftover neuronx-cc is found in the host's process table.

neuron-ls lists only processes that use a device, so an orphaned compiler never
shows there; yet the runtime fails (NRT_FAILURE) while one runs. The process here
is a real one, named like the compiler and not a child of this test, as an
orphan is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fake_tools import FakeTools, neuron_device

from kernelopt.devices.neuron import NeuronGate
from kernelopt.hosts import LocalHost

# These tests put stand-in compilers in the machine's process table: no other test runs
# meanwhile (tests/conftest.py).
pytestmark = pytest.mark.process_table_to_itself


def _orphan_compiler(folder: Path) -> int:
    """A process `sh .../neuronx-cc compile k.json`, re-parented away from this test."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "neuronx-cc"
    script.write_text("#!/bin/sh\nsleep 20\n")
    script.chmod(0o755)
    started = subprocess.run(
        ["sh", "-c", '"$0" compile k.json >/dev/null 2>&1 & echo $!', str(script)],
        capture_output=True,
        text=True,
        check=True,
        start_new_session=True,  # its own process group, so its sleep goes with it
    )
    return int(started.stdout.strip())


def test_a_leftover_compiler_in_the_process_table_makes_every_device_busy(
    fakes: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A terminal width in the environment (ps reads $COLUMNS even into a pipe) must not
    # cut the compiler's path before its name.
    monkeypatch.setenv("COLUMNS", "40")
    fakes.set("neuron", devices=[neuron_device(0), neuron_device(1)])
    pid = _orphan_compiler(tmp_path / "bin")
    try:
        time.sleep(0.2)  # the shell has started the script
        # The host's whole table has it (an unscoped gate reports it among whatever else
        # runs on this machine); the gate under test reads the orphan's own session, so
        # nothing else running here can change what it finds.
        unscoped = NeuronGate(search_path=[str(fakes.bin_dir)]).survey(LocalHost())
        assert all(f"(pid {pid})" in s.reason for s in unscoped)
        session = f"ps -ww -o pid=,args= -s {os.getsid(pid)} || true"
        gate = NeuronGate(search_path=[str(fakes.bin_dir)], process_table=session)
        statuses = gate.survey(LocalHost())
        assert [s.idle for s in statuses] == [False, False]
        for status in statuses:
            assert f"(pid {pid})" in status.reason and "neuronx-cc" in status.reason
            assert "leftover compiler" in status.reason and "NRT_FAILURE" in status.reason
            (process,) = [p for p in status.processes if p.pid == pid]
            assert process.detail == "leftover compiler (process table)"
        # A compiler the caller owns is not a leftover.
        mine = NeuronGate(
            search_path=[str(fakes.bin_dir)], ignore_pids=frozenset({pid}), process_table=session
        )
        assert all(s.idle for s in mine.survey(LocalHost()))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgid(pid), signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not all(s.idle for s in gate.survey(LocalHost())):
        time.sleep(0.1)
    assert all(s.idle for s in gate.survey(LocalHost()))
