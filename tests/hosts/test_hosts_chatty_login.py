"""SSHHost under a login shell that prints a banner before the command starts."""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from sshd_server import LoopbackSSHD

from kernelopt.hosts import SSHHost


@pytest.fixture
def chatty_host(chatty_sshd: LoopbackSSHD) -> Iterator[SSHHost]:
    host = SSHHost("gym-1", config_path=chatty_sshd.ssh_config)
    yield host
    host.close()


def _survivors(pattern: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True)
    return found.stdout.splitlines()


def test_the_login_shell_really_is_chatty(chatty_sshd: LoopbackSSHD) -> None:
    seen = subprocess.run(
        ["ssh", "-F", str(chatty_sshd.ssh_config), "gym-1", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "banner on stdout" in seen.stdout and "stderr" in seen.stderr


def test_output_holds_only_what_the_command_printed(chatty_host: SSHHost) -> None:
    result = chatty_host.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert chatty_host.run(["true"]).stdout == ""


def test_mkdtemp_path_is_clean(chatty_host: SSHHost) -> None:
    path = chatty_host.mkdtemp()
    try:
        assert re.fullmatch(r"/[^\s]*/kernelopt-[A-Za-z0-9]{8}", path), path
        assert chatty_host.run(["test", "-d", path]).ok
    finally:
        chatty_host.remove_tree(path)


def test_timed_out_command_is_killed_with_its_group(chatty_host: SSHHost) -> None:
    token = f"kernelopt-chatty-{uuid.uuid4().hex}"
    # The token ends the shell's command line; `[.]` keeps pgrep from matching itself.
    pattern = f"{token}[.]sleeper"
    script = f"sleep 60 & sleep 60; : {token}.sleeper"

    result = chatty_host.run(["sh", "-c", script], timeout=1.0)

    assert result.timed_out
    deadline = time.monotonic() + 5
    while _survivors(pattern) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _survivors(pattern) == []
    assert "banner" not in result.stdout and "stderr" not in result.stderr
