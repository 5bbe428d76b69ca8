"""Where commands run: LocalHost, SSHHost and a HostPool over leased devices."""

from kernelopt.hosts.base import CommandResult, Host, HostError
from kernelopt.hosts.local import LocalHost
from kernelopt.hosts.open import open_hosts
from kernelopt.hosts.pool import HostPool, JobResult, Slot
from kernelopt.hosts.ship import archive_commit, ship_commit
from kernelopt.hosts.ssh import SSHHost
from kernelopt.hosts.ssh_config import SSHTarget, resolve_alias

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
