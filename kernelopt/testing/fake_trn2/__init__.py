"""A fake Trainium2 toolchain that follows the public record of the Neuron SDK.

`FakeTrn2(home).install(sdk=...)` writes wrapper executables into
``home/bin`` and settings into ``home/config.json``, and activate scripts
that stand for the host's Python environments, in one of the SDK layouts as
they shipped (ENVIRONMENTS, STYLE_TOOLS; docs/trn2.md "The fake toolchain"):

* ``2.22``: ``neuronxcc.nki`` (NKI Beta 1, with baremetal/benchmark) without
  ``neuronxcc.nki_standalone``, and ``neuronpy`` (nkipy's predecessor) for the
  compiler baseline; neuron-profile; no nrtpy. The release that added
  nki_standalone and the one that renamed neuronpy are not on record: this is the
  oldest combination kernelopt supports, not a pinned release.
* ``2.26``: ``neuronxcc.nki`` (NKI Beta 1, with baremetal/benchmark) and
  ``neuronxcc.nki_standalone``; neuron-profile; no nrtpy; one environment.
* ``2.27``: both ``neuronxcc.nki`` and the new ``nki`` namespace; neuron-profile
  and neuron-explorer; no nrtpy.
* ``2.30``: the ``nki`` namespace with its compiler driver (the shape before June
  2026); neuron-explorer only; no nrtpy.
* ``2.32``: the current ``nki`` driver (``activate``) and ``nrtpy`` in an
  environment of its own (``activate-runtime``).

Each fake package names, per interface, the public source it follows and marks
"unverified" where none settles a behaviour; the "device" behind them is a model
of its own (hardware.py), not kernelopt's screening simulator. Nothing here is
active until an activate script or `env()` is used.
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
    SDK_ALIASES,
    SDK_STYLES,
    canonical,
)

TOOLS = {
    "neuron-ls": "neuron_ls",
    "neuron-monitor": "neuron_monitor",
    "neuron-profile": "neuron_profile",
    "neuron-explorer": "neuron_explorer",
    "neuronx-cc": "neuronx_cc",
}
PYLIB = Path(__file__).resolve().parent / "pylib"
# The folder holding this kernelopt package: a host's environment has kernelopt
# installed, and it must be this copy (not another install on the machine).
KERNELOPT_ROOT = Path(__file__).resolve().parents[3]
NRTPY_LIBRARY = "/opt/aws/neuron/lib"
# The Python environments of each SDK layout: the fake package folders each one holds
# (pylib/README-style notes in each package name its public sources).
ENVIRONMENTS = {
    # NKI Beta 1 without nki_standalone; neuronpy instead of nkipy; no nrtpy.
    "2.22": {"activate": ("older", "predecessor")},
    # NKI Beta 1 (neuronxcc.nki with baremetal/benchmark), nki_standalone, no nrtpy.
    "2.26": {"activate": ("older", "baseline")},
    # Both namespaces (NKI release notes 2.27.0), no nrtpy.
    "2.27": {"activate": ("older/v227", "older", "baseline")},
    # The nki namespace with its compiler driver (shape before June 2026), no nrtpy.
    "2.30": {"activate": ("older/v230", "older", "baseline")},
    # The current nki driver; nrtpy in an environment of its own (nrtpy-getting-started).
    "2.32": {
        "activate": ("current", "older", "baseline"),
        "activate-runtime": ("runtime",),
    },
}
# The tools on PATH: neuron-explorer from 2.27 and neuron-profile unsupported from 2.30
# (Neuron dev-tools release notes).
STYLE_TOOLS = {
    "2.22": ("neuron-ls", "neuron-monitor", "neuronx-cc", "neuron-profile"),
    "2.26": ("neuron-ls", "neuron-monitor", "neuronx-cc", "neuron-profile"),
    "2.27": ("neuron-ls", "neuron-monitor", "neuronx-cc", "neuron-profile", "neuron-explorer"),
    "2.30": ("neuron-ls", "neuron-monitor", "neuronx-cc", "neuron-explorer"),
    "2.32": ("neuron-ls", "neuron-monitor", "neuronx-cc", "neuron-explorer"),
}
DEFAULT_HOME = Path("~/.cache/kernelopt/fake-trn2")

__all__ = ["DEFAULTS", "DEFAULT_HOME", "FakeTrn2", "PYLIB", "SDK_ALIASES", "SDK_STYLES", "TOOLS"]


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
        """The (compile-side) environment: the only one with the older SDK."""
        return self.home / "activate"

    @property
    def runtime_activate_path(self) -> Path:
        """The nrtpy environment of the current SDK (the same script with the older)."""
        split = self.home / "activate-runtime"
        return split if split.exists() else self.activate_path

    @property
    def sdk(self) -> str:
        return canonical(str(self.settings()["sdk"]))

    def install(self, sdk: str | None = None) -> FakeTrn2:
        """Wrappers and activate scripts for ``sdk`` (default: as configured, else older)."""
        if sdk is not None:
            self.configure(sdk=sdk)
        style = self.sdk
        for tool in TOOLS:
            if tool in STYLE_TOOLS[style]:
                self.install_tool(tool)
            else:
                (self.bin_dir / tool).unlink(missing_ok=True)
        for name in ("activate", "activate-runtime"):
            script = self.home / name
            if name in ENVIRONMENTS[style]:
                lines = self._export_lines(ENVIRONMENTS[style][name])
                if name == "activate-runtime":
                    # The nrtpy environment needs the runtime's libraries (nrtpy-getting-started).
                    lines += f'export LD_LIBRARY_PATH={NRTPY_LIBRARY}:"$LD_LIBRARY_PATH"\n'
                script.write_text(lines)
            else:
                script.unlink(missing_ok=True)
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
            f"PYTHONPATH={shlex.quote(str(KERNELOPT_ROOT))} "
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
        if "sdk" in settings:
            settings["sdk"] = canonical(settings["sdk"])
        self.home.mkdir(parents=True, exist_ok=True)
        current = json.loads(self.config_path.read_text()) if self.config_path.exists() else {}
        current.update(settings)
        self._write_config(current)

    def settings(self) -> dict[str, Any]:
        """Defaults merged with the configured changes."""
        current = json.loads(self.config_path.read_text()) if self.config_path.exists() else {}
        return {**DEFAULTS, **current}

    def _write_config(self, data: dict[str, Any]) -> None:
        scratch = self.config_path.with_suffix(".tmp")
        scratch.write_text(json.dumps(data, indent=2))
        scratch.replace(self.config_path)  # a tool never reads half a file

    def _pythonpath(self, packages: tuple[str, ...]) -> str:
        # kernelopt itself is installed in each of the host's environments (docs/trn2.md,
        # "Host set-up"): the copy this fake belongs to stands for it.
        return ":".join([*(str(PYLIB / p) for p in packages), str(KERNELOPT_ROOT)])

    def env(self, base: dict[str, str] | None = None, *, runtime: bool = False) -> dict[str, str]:
        """Environment variables that enable the fake (on top of ``base``): the tools
        and the compile-side environment, or with ``runtime`` the nrtpy one."""
        base = dict(os.environ if base is None else base)
        style = ENVIRONMENTS[self.sdk]
        packages = style.get("activate-runtime" if runtime else "activate", style["activate"])
        path = base.get("PATH", "")
        extra = (
            {"LD_LIBRARY_PATH": NRTPY_LIBRARY} if runtime and "activate-runtime" in style else {}
        )
        return {
            **extra,
            "PATH": f"{self.bin_dir}:{path}" if path else str(self.bin_dir),
            # An environment's packages are its own, as an activated venv's site-packages.
            "PYTHONPATH": self._pythonpath(packages),
            HOME_ENV: str(self.home),
        }

    def _export_lines(self, packages: tuple[str, ...]) -> str:
        # PYTHONPATH is set, not extended: sourcing one environment's script after
        # another's leaves only its own packages importable, as with two venvs.
        return (
            f'export PATH={shlex.quote(str(self.bin_dir))}:"$PATH"\n'
            f"export PYTHONPATH={shlex.quote(self._pythonpath(packages))}\n"
            f"export {HOME_ENV}={shlex.quote(str(self.home))}\n"
        )

    def export_lines(self) -> str:
        """POSIX shell lines that enable the fake (its compile-side environment)."""
        return self._export_lines(ENVIRONMENTS[self.sdk]["activate"])

    @property
    def monitor_pids(self) -> list[int]:
        """Every neuron-monitor process started, so tests can check each was stopped."""
        log = self.home / MONITOR_PIDS_NAME
        return [int(x) for x in log.read_text().split()] if log.exists() else []

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        """Every recorded invocation (tool, args, start time, env), oldest first."""
        log = self.home / CALLS_NAME
        if not log.exists():
            return []
        entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        return [e for e in entries if tool is None or e["tool"] == tool]
