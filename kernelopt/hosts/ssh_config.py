"""Resolving an ~/.ssh/config alias to the values paramiko needs."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path

import paramiko

DEFAULT_CONFIG = "~/.ssh/config"
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"


@dataclass(frozen=True)
class SSHTarget:
    """Where an alias points: the resolved address, login and key files."""

    alias: str
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    known_hosts: str

    @property
    def known_hosts_key(self) -> str:
        """The name OpenSSH files the host key under ("[h]:p" for a non-22 port)."""
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"


def resolve_alias(
    alias: str,
    *,
    config_path: str | os.PathLike[str] | None = None,
    known_hosts: str | os.PathLike[str] | None = None,
) -> SSHTarget:
    """Look `alias` up in the ssh config (HostName, User, Port, IdentityFile,
    UserKnownHostsFile). A missing default config simply means "no aliases";
    a missing explicit config is an error the user should see.
    """
    path = Path(os.path.expanduser(str(config_path or DEFAULT_CONFIG)))
    if config_path is not None and not path.is_file():
        raise FileNotFoundError(f"ssh config {path} does not exist")
    values: dict[str, object] = {}
    if path.is_file():
        config = paramiko.SSHConfig.from_path(str(path))
        values = dict(config.lookup(alias))
    port_text = str(values.get("port", "22"))
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(
            f"ssh config {path}: host {alias}: Port {port_text!r} is not a number"
        ) from None
    identity = values.get("identityfile") or []
    identity_files = tuple(os.path.expanduser(str(item)) for item in identity)  # type: ignore[union-attr]
    if known_hosts is None:
        configured = str(values.get("userknownhostsfile", DEFAULT_KNOWN_HOSTS)).split()[0]
        known_hosts = configured
    return SSHTarget(
        alias=alias,
        hostname=str(values.get("hostname", alias)),
        port=port,
        user=str(values.get("user") or _login_name()),
        identity_files=identity_files,
        known_hosts=os.path.expanduser(str(known_hosts)),
    )


def _login_name() -> str:
    return getpass.getuser()
