"""Host names as a program or the command line gives them, opened as Hosts."""

from __future__ import annotations

import os
from collections.abc import Sequence

from kernelopt.hosts.base import Host
from kernelopt.hosts.local import LocalHost

LOCAL_NAMES = ("local", "localhost")


def open_hosts(
    names: Sequence[str],
    *,
    ssh_config: str | os.PathLike[str] | None = None,
    trust_new_hosts: bool = False,
) -> list[Host]:
    """LocalHost for "local"/"localhost" (and for an empty list), SSHHost for
    any other name, which is an ~/.ssh/config alias or a hostname. Nothing
    connects until the first command."""
    if not names:
        return [LocalHost()]
    from kernelopt.hosts.ssh import SSHHost  # paramiko: only when a host may be remote

    duplicates = sorted({name for name in names if list(names).count(name) > 1})
    if duplicates:
        raise ValueError(f"host listed more than once: {', '.join(duplicates)}")
    return [
        LocalHost(name)
        if name in LOCAL_NAMES
        else SSHHost(name, config_path=ssh_config, trust_new_hosts=trust_new_hosts)
        for name in names
    ]
