from __future__ import annotations

import pytest
from sshd_server import LoopbackSSHD

from kernelopt.hosts import LocalHost, SSHHost, open_hosts


def test_local_names_and_aliases(sshd: LoopbackSSHD) -> None:
    hosts = open_hosts(["localhost", "gym-2"], ssh_config=sshd.ssh_config)
    assert isinstance(hosts[0], LocalHost) and isinstance(hosts[1], SSHHost)
    assert [h.name for h in hosts] == ["localhost", "gym-2"]
    assert hosts[1].target.port == sshd.port


def test_no_names_means_this_machine() -> None:
    (host,) = open_hosts([])
    assert isinstance(host, LocalHost)


def test_duplicates_are_refused() -> None:
    with pytest.raises(ValueError, match="more than once: local"):
        open_hosts(["local", "local"])
