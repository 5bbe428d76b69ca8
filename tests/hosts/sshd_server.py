"""A real OpenSSH server on loopback for tests and benchmarks.

It runs as the current user with its own host key, user key, authorized_keys
and sshd_config, and writes an ssh config that maps several aliases to it.
"""

from __future__ import annotations

import getpass
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"

# A command that kills the sshd process serving its own session: under SSHHost
# the command's parent is `setsid -w`, whose parent is the per-connection sshd.
KILL_OWN_SESSION = ["sh", "-c", "kill -9 $(awk '{print $4}' /proc/$PPID/stat); sleep 5"]


def sshd_missing_reason() -> str | None:
    """Why the SSH tests cannot run here, or None when they can."""
    if not Path(SSHD).is_file():
        return f"{SSHD} not found (install the Debian package openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen not found (install openssh-client)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )


@dataclass
class LoopbackSSHD:
    """One sshd process; `ssh_config` maps every alias to it."""

    root: Path
    aliases: tuple[str, ...]
    port: int = 0
    # Extra sshd_config lines, e.g. "SetEnv HOME=..." for a login shell with its own rc files.
    extra_config: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None

    @property
    def ssh_config(self) -> Path:
        return self.root / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def host_key_line(self) -> str:
        public = (self.root / "host_key.pub").read_text().split()
        return f"[127.0.0.1]:{self.port} {public[0]} {public[1]}\n"

    def start(self) -> LoopbackSSHD:
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        _keygen(self.root / "host_key")
        _keygen(self.root / "user_key")
        shutil.copy(self.root / "user_key.pub", self.root / "authorized_keys")
        (self.root / "sshd_config").write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.root / 'host_key'}",
                    f"PidFile {self.root / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
                    "UsePAM no",
                    "StrictModes no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "PermitRootLogin yes",
                    "Subsystem sftp internal-sftp",
                    "MaxSessions 200",
                    "MaxStartups 200",
                    "LogLevel ERROR",
                    *self.extra_config,
                    "",
                ]
            )
        )
        self.known_hosts.write_text(self.host_key_line)
        self.ssh_config.write_text(
            "".join(
                f"Host {alias}\n  HostName 127.0.0.1\n  Port {self.port}\n"
                f"  User {getpass.getuser()}\n"
                f"  IdentityFile {self.root / 'user_key'}\n"
                f"  UserKnownHostsFile {self.known_hosts}\n"
                for alias in self.aliases
            )
        )
        # sshd refuses to start without its privilege separation directory.
        try:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        except PermissionError:
            pass  # not root: sshd then runs without privilege separation
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.root / "sshd_config")],
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "sshd.log", "wb"),  # noqa: SIM115 - owned by the process
        )
        self._wait_listening()
        return self

    def _wait_listening(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                log = (self.root / "sshd.log").read_text(errors="replace")
                raise RuntimeError(f"sshd exited with {self.process.returncode}: {log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen on port {self.port} within {timeout}s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
