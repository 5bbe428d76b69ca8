"""The Gate interface: which devices a host has and whether they are idle."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from kernelopt.hosts.base import CommandResult, Host


class GateError(RuntimeError):
    """A device tool is missing, failed, or printed something we cannot read."""


@dataclass(frozen=True)
class ProcessInfo:
    """A process attached to a device, as the device tool reports it."""

    pid: int
    command: str
    detail: str = ""


@dataclass(frozen=True)
class DeviceStatus:
    """One device on one host at survey time.

    `binding` holds the environment variables that pin a command to the device.
    `memory_used` is in the tool's own unit (nvidia: MiB, rocm: % of VRAM).
    `reason` says why the device is busy, or is "idle".
    """

    host: str
    device: str
    idle: bool
    utilization: float | None
    memory_used: float | None
    processes: tuple[ProcessInfo, ...]
    binding: dict[str, str] = field(default_factory=dict)
    reason: str = "idle"
    kind: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "host": self.host,
            "device": self.device,
            "kind": self.kind,
            "idle": self.idle,
            "utilization": self.utilization,
            "memory_used": self.memory_used,
            "processes": [
                {"pid": p.pid, "command": p.command, "detail": p.detail} for p in self.processes
            ],
            "binding": dict(self.binding),
            "reason": self.reason,
        }


@runtime_checkable
class Gate(Protocol):
    """Finds devices and tells idle from busy.

    Contract (tests/devices/test_gate_contract.py runs it against every kind):
    `survey` returns one DeviceStatus per device, idle ones with a non-busy
    reason and a binding; it raises GateError naming the command and the host
    when a tool is missing or its output is unreadable. It never changes state.
    """

    kind: str

    def survey(self, host: Host) -> list[DeviceStatus]: ...


def run_tool(
    host: Host,
    argv: Sequence[str],
    *,
    search_path: Sequence[str] = (),
    timeout: float = 60.0,
) -> CommandResult:
    """Run a device tool, with `search_path` dirs put in front of PATH.

    Device tools often live outside a non-interactive shell's PATH (Neuron in
    /opt/aws/neuron/bin), hence the prefix. Missing tool -> GateError.
    """
    result = host.run(tool_line(argv, search_path), timeout=timeout)
    command = shlex.join(argv)
    if result.returncode == 127:
        where = f" (also looked in {', '.join(search_path)})" if search_path else ""
        raise GateError(f"{argv[0]} not found on host {host.name}{where}: cannot run `{command}`")
    if result.timed_out:
        raise GateError(f"`{command}` on host {host.name} did not finish within {timeout:g}s")
    return result


def tool_line(argv: Sequence[str] | str, search_path: Sequence[str] = ()) -> str:
    """A shell line running argv (quoted list, or a str taken as shell text)."""
    text = argv if isinstance(argv, str) else shlex.join(argv)
    if not search_path:
        return text
    dirs = ":".join(search_path)
    return f'PATH={shlex.quote(dirs)}:"$PATH"; export PATH; {text}'


def tool_failure(host: Host, argv: Sequence[str], result: CommandResult) -> GateError:
    detail = (result.stderr or result.stdout).strip().splitlines()
    tail = detail[-1] if detail else "no output"
    return GateError(
        f"`{shlex.join(argv)}` failed on host {host.name} with exit code {result.returncode}: {tail}"
    )
