"""Puts fake device tools on a bin dir, steered by a state file.

The Neuron tools (neuron-ls, neuron-monitor) are the fake Trainium2
toolchain's own (kernelopt.testing.fake_trn2): one set of fakes following the
documented formats, whose settings live in this root. nvidia-smi and rocm-smi
are the scripts in tests/fakes, steered by the state file.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import FakeTrn2

FAKES = Path(__file__).resolve().parents[1] / "fakes"
# The machine's process table is shared with whatever else runs here; a gate under
# test looks for leftover compilers among this test process's children only.
OWN_PROCESSES = f"ps -ww -o pid=,args= --ppid {os.getpid()} || true"
NEURON_TOOLS = ("neuron-ls", "neuron-monitor")
TOOLS = (*NEURON_TOOLS, "nvidia-smi", "rocm-smi")

# The tests' words for the neuron state -> the fake Trn2 toolchain's settings.
_NEURON_SETTINGS = {
    "format": "neuron_ls_format",
    "output": "neuron_ls_output",
    "wrap_key": "neuron_ls_wrap_key",
    "devices": "devices",
    "utilization": "utilization",
    "runtime_pid": "monitor_runtime_pid",
    "monitor": "monitor",
    "period": "monitor_period_s",
}


class FakeTools:
    """A bin dir of wrappers that run the fakes with this interpreter and state.

    The wrappers pin the interpreter and the state so the fakes behave the
    same through LocalHost and through an SSH session (which does not forward
    the test's environment).
    """

    def __init__(self, root: Path, tools: tuple[str, ...] = TOOLS) -> None:
        self.root = root
        self.bin_dir = root / "bin"
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        self.state_path = root / "fake-state.json"
        self.state: dict[str, Any] = {}
        self.trn2 = FakeTrn2(root)
        # No device until a test describes some, and a fast monitor.
        self.trn2.configure(devices=[], monitor_period_s=0.05)
        self.save()
        for tool in tools:
            self.install(tool)

    def install(self, tool: str) -> None:
        if tool in NEURON_TOOLS:
            self.trn2.install_tool(tool)
            return
        wrapper = self.bin_dir / tool
        wrapper.write_text(
            "#!/bin/sh\n"
            f"KERNELOPT_FAKE_STATE={shlex.quote(str(self.state_path))} "
            f'exec {shlex.quote(sys.executable)} {shlex.quote(str(FAKES / tool))} "$@"\n'
        )
        wrapper.chmod(0o755)

    def remove(self, tool: str) -> None:
        (self.bin_dir / tool).unlink()

    def set(self, section: str, **values: Any) -> None:
        self.state.setdefault(section, {}).update(values)
        self.save()
        if section == "neuron":
            self.trn2.configure(**{_NEURON_SETTINGS[k]: v for k, v in values.items()})

    def save(self) -> None:
        scratch = self.state_path.with_suffix(".tmp")
        scratch.write_text(json.dumps(self.state))
        scratch.replace(self.state_path)  # atomic: a fake never reads half a file

    @property
    def calls(self) -> list[str]:
        """Every tool call in order, as one ``tool args`` line each."""
        return [shlex.join([c["tool"], *c["args"]]) for c in self.trn2.calls()]

    @property
    def monitor_pids(self) -> list[int]:
        return self.trn2.monitor_pids


def neuron_device(
    number: int, *, lnc: int = 1, busy_pid: int | None = None, cores_per_device: int = 8
) -> dict[str, Any]:
    """A device spec for the fake neuron-ls; `busy_pid` attaches a process.

    Its core ids are logical ids at the host's LNC, as neuron-ls prints them:
    `cores_per_device` physical cores make `cores_per_device // lnc` logical ones."""
    per = cores_per_device // lnc
    spec: dict[str, Any] = {
        "id": number,
        "lnc": lnc,
        "cores": list(range(number * per, (number + 1) * per)),
    }
    if busy_pid is not None:
        spec["processes"] = [{"pid": busy_pid, "command": "python3 train.py"}]
    return spec
