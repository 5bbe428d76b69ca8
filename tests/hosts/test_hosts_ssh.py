"""SSHHost specifics: aliases, host-key policy, dropped sessions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import paramiko
import pytest
from sshd_server import KILL_OWN_SESSION, LoopbackSSHD

from kernelopt.hosts import HostError, SSHHost, resolve_alias


def test_alias_resolves_from_the_given_config(sshd: LoopbackSSHD) -> None:
    target = resolve_alias("gym-2", config_path=sshd.ssh_config)
    assert (target.hostname, target.port) == ("127.0.0.1", sshd.port)
    assert target.identity_files == (str(sshd.root / "user_key"),)
    assert target.known_hosts == str(sshd.known_hosts)
    assert target.known_hosts_key == f"[127.0.0.1]:{sshd.port}"


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="ssh config .*does not exist"):
        resolve_alias("gym-1", config_path=tmp_path / "nope")


def test_unknown_host_is_refused_with_advice(sshd: LoopbackSSHD, fresh_known_hosts: Path) -> None:
    host = SSHHost("gym-2", config_path=sshd.ssh_config, known_hosts=fresh_known_hosts)
    with pytest.raises(HostError, match=r"unknown host \[127\.0\.0\.1\]:\d+.*ssh-keyscan"):
        host.run(["true"])
    assert fresh_known_hosts.read_text() == ""


def test_trust_new_hosts_accepts_and_remembers(sshd: LoopbackSSHD, fresh_known_hosts: Path) -> None:
    trusting = SSHHost(
        "gym-2", config_path=sshd.ssh_config, known_hosts=fresh_known_hosts, trust_new_hosts=True
    )
    assert trusting.run(["echo", "ok"]).stdout == "ok\n"
    trusting.close()
    saved = fresh_known_hosts.read_text().split()
    assert saved[:3] == sshd.host_key_line.split()
    strict = SSHHost("gym-2", config_path=sshd.ssh_config, known_hosts=fresh_known_hosts)
    assert strict.run(["true"]).ok
    strict.close()


def test_changed_host_key_is_refused_even_when_trusting(
    sshd: LoopbackSSHD, fresh_known_hosts: Path, tmp_path: Path
) -> None:
    other = paramiko.Ed25519Key.from_private_key_file(str(sshd.root / "user_key"))
    fresh_known_hosts.write_text(
        f"[127.0.0.1]:{sshd.port} {other.get_name()} {other.get_base64()}\n"
    )
    host = SSHHost(
        "gym-3", config_path=sshd.ssh_config, known_hosts=fresh_known_hosts, trust_new_hosts=True
    )
    with pytest.raises(HostError, match="does not match"):
        host.run(["true"])


def test_unreachable_host_is_a_host_error(tmp_path: Path, sshd: LoopbackSSHD) -> None:
    config = tmp_path / "config"
    config.write_text("Host dead\n  HostName 127.0.0.1\n  Port 1\n")
    host = SSHHost("dead", config_path=config, known_hosts=sshd.known_hosts, connect_timeout=2)
    with pytest.raises(HostError, match="cannot reach 127.0.0.1:1"):
        host.run(["true"])


def test_session_killed_mid_command_is_a_host_error_then_reconnects(sshd: LoopbackSSHD) -> None:
    host = SSHHost("gym-3", config_path=sshd.ssh_config)
    with pytest.raises(HostError, match="connection lost"):
        host.run(KILL_OWN_SESSION)
    assert host.run(["echo", "back"]).stdout == "back\n"
    host.close()


def test_wrong_user_key_is_an_authentication_error(sshd: LoopbackSSHD, tmp_path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")],
        check=True,
    )
    config = tmp_path / "config"
    config.write_text(
        f"Host stranger\n  HostName 127.0.0.1\n  Port {sshd.port}\n"
        f"  IdentityFile {tmp_path / 'stranger'}\n"
    )
    host = SSHHost("stranger", config_path=config, known_hosts=sshd.known_hosts)
    with pytest.raises(HostError, match=r"authentication failed for .*stranger"):
        host.run(["true"])
