"""Puts the fake device tools of tests/fakes on a bin dir, with a state file."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

FAKES = Path(__file__).resolve().parents[1] / "fakes"
TOOLS = ("neuron-ls", "neuron-monitor", "nvidia-smi", "rocm-smi")


class FakeTools:
    """A bin dir of wrappers that run the fakes with this interpreter and state.

    The wrappers pin the interpreter and the state file so the fakes behave the
    same through LocalHost and through an SSH session (which does not forward
    the test's environment).
    """

    def __init__(self, root: Path, tools: tuple[str, ...] = TOOLS) -> None:
        self.root = root
        self.bin_dir = root / "bin"
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        self.state_path = root / "fake-state.json"
        self.state: dict[str, Any] = {}
        self.save()
        for tool in tools:
            self.install(tool)

    def install(self, tool: str) -> None:
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

    def save(self) -> None:
        scratch = self.state_path.with_suffix(".tmp")
        scratch.write_text(json.dumps(self.state))
        scratch.replace(self.state_path)  # atomic: a fake never reads half a file

    @property
    def calls(self) -> list[str]:
        log = self.root / "calls.log"
        return log.read_text().splitlines() if log.exists() else []

    @property
    def monitor_pids(self) -> list[int]:
        log = self.root / "monitor.pids"
        return [int(x) for x in log.read_text().split()] if log.exists() else []


def neuron_device(
    number: int, *, lnc: int = 1, busy_pid: int | None = None, cores_per_device: int = 8
) -> dict[str, Any]:
    """A device spec for the fake neuron-ls; `busy_pid` attaches a process."""
    first = number * cores_per_device
    spec: dict[str, Any] = {
        "id": number,
        "lnc": lnc,
        "cores": list(range(first, first + cores_per_device)),
    }
    if busy_pid is not None:
        spec["processes"] = [{"pid": busy_pid, "command": "python3 train.py"}]
    return spec
