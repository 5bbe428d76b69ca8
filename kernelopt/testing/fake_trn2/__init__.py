"""A fake Trainium2 toolchain backed by kernelopt's simulator.

`FakeTrn2(home).install()` writes wrapper executables (neuron-ls,
neuron-monitor, neuron-profile, neuronx-cc) into ``home/bin`` and settings
into ``home/config.json``; `export_lines()` gives the shell lines that put
them and the fake SDK modules (neuronxcc, nrtpy, nki) first on PATH and
PYTHONPATH. Nothing here is active until those lines are used: kernelopt
never looks for this package on its own.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2.config import (
    CALLS_NAME,
    CONFIG_NAME,
    DEFAULTS,
    HOME_ENV,
    MONITOR_PIDS_NAME,
)

TOOLS = {
    "neuron-ls": "neuron_ls",
    "neuron-monitor": "neuron_monitor",
    "neuron-profile": "neuron_profile",
    "neuronx-cc": "neuronx_cc",
}
PYLIB = Path(__file__).resolve().parent / "pylib"
DEFAULT_HOME = Path("~/.cache/kernelopt/fake-trn2")

__all__ = ["DEFAULTS", "DEFAULT_HOME", "FakeTrn2", "PYLIB", "TOOLS"]


@dataclass(frozen=True)
class FakeTrn2:
    """One installed fake toolchain: its wrappers pin this interpreter and home."""

    home: Path
    python: str = sys.executable

    @property
    def bin_dir(self) -> Path:
        return self.home / "bin"

    @property
    def config_path(self) -> Path:
        return self.home / CONFIG_NAME

    @property
    def activate_path(self) -> Path:
        return self.home / "activate"

    def install(self) -> FakeTrn2:
        for tool in TOOLS:
            self.install_tool(tool)
        self.activate_path.write_text(self.export_lines())
        return self

    def install_tool(self, tool: str) -> Path:
        """The wrapper executable for one fake tool in ``bin_dir``; it pins this
        interpreter and home, so it behaves the same through any Host."""
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        if not self.config_path.exists():
            self._write_config({})
        wrapper = self.bin_dir / tool
        wrapper.write_text(
            "#!/bin/sh\n"
            f"{HOME_ENV}={shlex.quote(str(self.home))} "
            f"PYTHONPATH={shlex.quote(str(PYLIB))}${{PYTHONPATH:+:$PYTHONPATH}} "
            f"exec {shlex.quote(self.python)} -m kernelopt.testing.fake_trn2.tools.{TOOLS[tool]} "
            '"$@"\n'
        )
        wrapper.chmod(0o755)
        return wrapper

    def configure(self, **settings: Any) -> None:
        """Change settings (see config.DEFAULTS); unknown names are refused."""
        unknown = sorted(set(settings) - set(DEFAULTS))
        if unknown:
            raise ValueError(
                f"unknown fake Trn2 settings {unknown}; known: {', '.join(sorted(DEFAULTS))}"
            )
        current = json.loads(self.config_path.read_text()) if self.config_path.exists() else {}
        current.update(settings)
        self._write_config(current)

    def _write_config(self, data: dict[str, Any]) -> None:
        scratch = self.config_path.with_suffix(".tmp")
        scratch.write_text(json.dumps(data, indent=2))
        scratch.replace(self.config_path)  # a tool never reads half a file

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment variables that enable the fake (on top of ``base``)."""
        base = dict(os.environ if base is None else base)
        path = base.get("PATH", "")
        pythonpath = base.get("PYTHONPATH", "")
        return {
            "PATH": f"{self.bin_dir}:{path}" if path else str(self.bin_dir),
            "PYTHONPATH": f"{PYLIB}:{pythonpath}" if pythonpath else str(PYLIB),
            HOME_ENV: str(self.home),
        }

    def export_lines(self) -> str:
        """POSIX shell lines that enable the fake in the shell that evaluates them."""
        return (
            f'export PATH={shlex.quote(str(self.bin_dir))}:"$PATH"\n'
            f'export PYTHONPATH={shlex.quote(str(PYLIB))}${{PYTHONPATH:+:"$PYTHONPATH"}}\n'
            f"export {HOME_ENV}={shlex.quote(str(self.home))}\n"
        )

    @property
    def monitor_pids(self) -> list[int]:
        """Every neuron-monitor process started, so tests can check each was stopped."""
        log = self.home / MONITOR_PIDS_NAME
        return [int(x) for x in log.read_text().split()] if log.exists() else []

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        """Every recorded invocation (tool, args, start time), oldest first."""
        log = self.home / CALLS_NAME
        if not log.exists():
            return []
        entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        return [e for e in entries if tool is None or e["tool"] == tool]
