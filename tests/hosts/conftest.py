from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sshd_server import LoopbackSSHD, sshd_missing_reason

from kernelopt.hosts import Host, LocalHost, SSHHost

ALIASES = ("gym-1", "gym-2", "gym-3")


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackSSHD]:
    reason = sshd_missing_reason()
    if reason:
        pytest.skip(f"SSH tests need a local OpenSSH server: {reason}")
    server = LoopbackSSHD(tmp_path_factory.mktemp("sshd"), ALIASES).start()
    yield server
    server.stop()


# A login shell that talks before the command starts: banner and motd-like lines
# on both streams, one without a trailing newline.
CHATTY_RC = (
    'echo "Welcome to gym (banner on stdout)"\n'
    'echo "last login: yesterday (stderr)" >&2\n'
    'printf "no newline on stdout" \n'
    'printf "no newline on stderr" >&2\n'
)


@pytest.fixture(scope="session")
def chatty_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackSSHD]:
    """A second loopback server whose sessions get a HOME with a chatty ~/.bashrc.

    sshd hands the account's login shell (bash here) `-c <command>`; bash reads
    ~/.bashrc for commands that come over ssh, so the rc file's lines reach the
    channel's stdout and stderr before kernelopt's command runs.
    """
    reason = sshd_missing_reason()
    if reason:
        pytest.skip(f"SSH tests need a local OpenSSH server: {reason}")
    root = tmp_path_factory.mktemp("chatty-sshd")
    home = root / "home"
    home.mkdir()
    for rc in (".bashrc", ".profile", ".bash_profile"):
        (home / rc).write_text(CHATTY_RC)
    server = LoopbackSSHD(root / "server", ALIASES, extra_config=(f"SetEnv HOME={home}",))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def ssh_host(sshd: LoopbackSSHD) -> Iterator[SSHHost]:
    host = SSHHost("gym-1", config_path=sshd.ssh_config)
    yield host
    host.close()


@pytest.fixture(params=["local", "ssh"])
def host(request: pytest.FixtureRequest) -> Host:
    if request.param == "local":
        return LocalHost()
    return request.getfixturevalue("ssh_host")


@pytest.fixture
def scratch(host: Host) -> Iterator[str]:
    path = host.mkdtemp()
    yield path
    host.remove_tree(path)


@pytest.fixture
def fresh_known_hosts(sshd: LoopbackSSHD, tmp_path: Path) -> Path:
    """An empty known_hosts, so the loopback server is an unknown host."""
    path = tmp_path / "known_hosts"
    path.write_text("")
    return path


@pytest.fixture
def fakes(tmp_path: Path) -> Any:
    """The fake device tools of tests/devices, reachable through any host."""

    path = Path(__file__).resolve().parents[1] / "devices" / "fake_tools.py"
    spec = importlib.util.spec_from_file_location("kernelopt_test_fake_tools", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FakeTools(tmp_path / "fakes")
