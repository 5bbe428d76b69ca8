"""Where commands run: LocalHost, SSHHost and a HostPool over leased devices."""

from __future__ import annotations

import importlib

from kernelopt.hosts.base import CommandResult, Host, HostError
from kernelopt.hosts.local import LocalHost
from kernelopt.hosts.open import open_hosts
from kernelopt.hosts.pool import HostPool, JobResult, Slot
from kernelopt.hosts.ship import archive_commit, ship_commit

# SSH pulls in paramiko (a tenth of a second at every start); load it on first use.
_LAZY = {
    "SSHHost": "kernelopt.hosts.ssh",
    "SSHTarget": "kernelopt.hosts.ssh_config",
    "resolve_alias": "kernelopt.hosts.ssh_config",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CommandResult",
    "Host",
    "HostError",
    "HostPool",
    "JobResult",
    "LocalHost",
    "SSHHost",
    "SSHTarget",
    "Slot",
    "archive_commit",
    "open_hosts",
    "resolve_alias",
    "ship_commit",
]
