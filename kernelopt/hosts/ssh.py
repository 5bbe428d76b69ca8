"""SSHHost: commands on a remote machine over paramiko, host keys verified."""

from __future__ import annotations

import io
import logging
import os
import re
import secrets
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import paramiko

from kernelopt.hosts.base import CommandResult, HostError
from kernelopt.hosts.shell import shell_line
from kernelopt.hosts.ssh_config import SSHTarget, resolve_alias

log = logging.getLogger(__name__)

# The wrapper prints a marker line unique to the call on stdout, and on stderr
# the same marker with the command's process group, so a timeout can kill the
# whole group from a second channel. A login shell may print a banner, motd or
# rc-file lines first: everything up to and including the marker line is not
# the command's output and is dropped.
_PGID_FIELD = re.compile(r" pgid=(\d+)")
_TRANSPORT_ERRORS = (paramiko.SSHException, EOFError, OSError)


class _TrustAndRemember(paramiko.MissingHostKeyPolicy):
    """Opt-in trust on first use: accept an unknown key and save it to known_hosts."""

    def __init__(self, known_hosts: str) -> None:
        self._known_hosts = known_hosts

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        # Append one line rather than rewriting the file: other entries, comments
        # and markers in the user's known_hosts stay exactly as they were.
        with open(self._known_hosts, "a", encoding="ascii") as known:
            known.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        log.warning(
            "trusting new host key for %s (%s %s), saved to %s",
            hostname,
            key.get_name(),
            key.fingerprint,
            self._known_hosts,
        )


class SSHHost:
    """A remote machine reached by an ~/.ssh/config alias (or a plain hostname).

    Host keys are checked against known_hosts; an unknown host is refused
    unless `trust_new_hosts=True`. A dropped transport is reconnected once,
    before a command starts; a drop while a command runs raises HostError
    (the command's outcome is unknown, so it is never silently re-run).
    Remote commands need a POSIX shell and util-linux `setsid`.
    """

    def __init__(
        self,
        alias: str,
        *,
        config_path: str | os.PathLike[str] | None = None,
        known_hosts: str | os.PathLike[str] | None = None,
        trust_new_hosts: bool = False,
        connect_timeout: float = 10.0,
        keepalive_s: float = 15.0,
    ) -> None:
        self.name = alias
        self.target: SSHTarget = resolve_alias(
            alias, config_path=config_path, known_hosts=known_hosts
        )
        self.trust_new_hosts = trust_new_hosts
        self.connect_timeout = connect_timeout
        self.keepalive_s = keepalive_s
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.Lock()

    # -- connection -----------------------------------------------------------

    def _connect(self) -> paramiko.SSHClient:
        target = self.target
        client = paramiko.SSHClient()
        known = Path(target.known_hosts)
        if self.trust_new_hosts and not known.exists():
            known.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            known.touch(mode=0o600)
        if known.exists():
            client.load_host_keys(str(known))
        if self.trust_new_hosts:
            client.set_missing_host_key_policy(_TrustAndRemember(str(known)))
        else:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                target.hostname,
                port=target.port,
                username=target.user,
                key_filename=list(target.identity_files) or None,
                look_for_keys=not target.identity_files,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
            )
        except paramiko.BadHostKeyException as error:
            client.close()
            raise HostError(
                self.name,
                f"host key for {target.known_hosts_key} does not match {known}: "
                "refusing to connect (the host was reinstalled or someone is in the way)",
            ) from error
        except paramiko.AuthenticationException as error:
            client.close()
            keys = ", ".join(target.identity_files) or "default keys and agent"
            raise HostError(
                self.name,
                f"authentication failed for {target.user}@{target.hostname}:{target.port} "
                f"(tried {keys})",
            ) from error
        except paramiko.SSHException as error:
            client.close()
            if "not found in known_hosts" in str(error):
                raise HostError(
                    self.name,
                    f"unknown host {target.known_hosts_key}: its key is not in {known}; "
                    f"add it (ssh-keyscan -p {target.port} {target.hostname} >> {known}) "
                    "or allow trusting new hosts",
                ) from error
            raise HostError(self.name, f"ssh connection failed: {error}") from error
        except OSError as error:
            client.close()
            raise HostError(
                self.name,
                f"cannot reach {target.hostname}:{target.port}: {error.strerror or error}",
            ) from error
        transport = client.get_transport()
        if transport is not None and self.keepalive_s > 0:
            transport.set_keepalive(int(max(1, self.keepalive_s)))
        return client

    def _transport(self, *, reconnect: bool = False) -> paramiko.Transport:
        with self._lock:
            transport = self._client.get_transport() if self._client else None
            if reconnect or transport is None or not transport.is_active():
                if self._client is not None:
                    self._client.close()
                self._client = None
                self._client = self._connect()
                transport = self._client.get_transport()
            assert transport is not None
            return transport

    def _open_channel(self) -> paramiko.Channel:
        """A fresh session channel; one reconnect if the transport had dropped."""
        try:
            return self._transport().open_session(timeout=self.connect_timeout)
        except _TRANSPORT_ERRORS:
            try:
                return self._transport(reconnect=True).open_session(timeout=self.connect_timeout)
            except _TRANSPORT_ERRORS as error:
                raise HostError(self.name, f"cannot open an ssh session: {error}") from error

    def connect(self) -> None:
        """Connect now (otherwise the first command connects)."""
        self._transport()

    # -- commands ---------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str] | str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> CommandResult:
        line = shell_line(argv, env=env, cwd=cwd)
        mark = f"__kernelopt_{secrets.token_hex(12)}__"
        said = shlex.quote(mark)
        inner = f'printf "%s\\n" {said}; printf "%s pgid=%s\\n" {said} "$$" >&2; {line}'
        wrapper = f"exec setsid -w sh -c {shlex.quote(inner)}"
        started = time.monotonic()
        channel = self._open_channel()
        try:
            channel.exec_command(wrapper)
            if stdin:
                channel.sendall(stdin)
            channel.shutdown_write()
            return self._collect(channel, started, timeout, mark)
        except _TRANSPORT_ERRORS as error:
            raise HostError(self.name, f"connection lost during command: {error}") from error
        finally:
            channel.close()

    def _collect(
        self, channel: paramiko.Channel, started: float, timeout: float | None, mark: str
    ) -> CommandResult:
        out, err = bytearray(), bytearray()
        deadline = None if timeout is None else started + timeout
        pause = 0.001
        while True:
            progressed = False
            while channel.recv_ready():
                out += channel.recv(65536)
                progressed = True
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(65536)
                progressed = True
            # sshd may send the exit status before the last output, so also wait
            # for end-of-file (or close) and empty buffers before finishing.
            finished = channel.exit_status_ready() and (channel.eof_received or channel.closed)
            if finished and not channel.recv_ready() and not channel.recv_stderr_ready():
                break
            transport = channel.get_transport()
            if channel.closed or transport is None or not transport.is_active():
                raise HostError(self.name, "connection lost during command (transport closed)")
            if deadline is not None and time.monotonic() >= deadline:
                return self._time_out(channel, started, out, err, mark)
            pause = 0.001 if progressed else min(pause * 2, 0.02)
            time.sleep(pause)
        code = channel.recv_exit_status()
        if code == -1:
            # paramiko's "no exit-status arrived": the session died under us.
            raise HostError(self.name, "connection lost during command (no exit status)")
        stderr_text, _ = _strip_pgid(err.decode("utf-8", "replace"), mark)
        return CommandResult(
            returncode=code,
            stdout=_after_mark(out.decode("utf-8", "replace"), mark)[0],
            stderr=stderr_text,
            timed_out=False,
            duration_s=time.monotonic() - started,
        )

    def _time_out(
        self, channel: paramiko.Channel, started: float, out: bytearray, err: bytearray, mark: str
    ) -> CommandResult:
        stderr_text, pgid = _strip_pgid(err.decode("utf-8", "replace"), mark)
        # On a slow host the timeout can come before the command even printed
        # its group id; wait a little for it rather than leave the group alive.
        announce_end = time.monotonic() + 5.0
        while pgid is None and not channel.exit_status_ready() and time.monotonic() < announce_end:
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(65536)
            while channel.recv_ready():
                out += channel.recv(65536)
            stderr_text, pgid = _strip_pgid(err.decode("utf-8", "replace"), mark)
            time.sleep(0.01)
        if pgid is not None:
            self._kill_group(pgid)
        grace_end = time.monotonic() + 2.0
        while not channel.exit_status_ready() and time.monotonic() < grace_end:
            time.sleep(0.01)
        code = channel.recv_exit_status() if channel.exit_status_ready() else -9
        return CommandResult(
            returncode=code,
            stdout=_after_mark(out.decode("utf-8", "replace"), mark)[0],
            stderr=stderr_text,
            timed_out=True,
            duration_s=time.monotonic() - started,
        )

    def _kill_group(self, pgid: int) -> None:
        group = shlex.quote(f"-{pgid}")
        script = (
            f"kill -TERM -- {group} 2>/dev/null; sleep 0.2; kill -KILL -- {group} 2>/dev/null; true"
        )
        try:
            channel = self._open_channel()
            try:
                channel.exec_command(script)
                channel.recv_exit_status()
            finally:
                channel.close()
        except (HostError, *_TRANSPORT_ERRORS) as error:
            log.warning(
                "host %s: could not kill timed-out process group %s: %s", self.name, pgid, error
            )

    # -- files -----------------------------------------------------------------

    def _sftp(self) -> paramiko.SFTPClient:
        try:
            return paramiko.SFTPClient.from_transport(self._transport())  # type: ignore[return-value]
        except _TRANSPORT_ERRORS:
            try:
                return paramiko.SFTPClient.from_transport(self._transport(reconnect=True))  # type: ignore[return-value]
            except _TRANSPORT_ERRORS as error:
                raise HostError(self.name, f"cannot open sftp: {error}") from error

    def put_bytes(self, data: bytes, remote_path: str) -> None:
        sftp = self._sftp()
        try:
            sftp.putfo(io.BytesIO(data), remote_path, confirm=True)
        except OSError as error:
            raise HostError(self.name, f"cannot write {remote_path}: {error}") from error
        finally:
            sftp.close()

    def get_bytes(self, remote_path: str) -> bytes:
        sftp = self._sftp()
        buffer = io.BytesIO()
        try:
            sftp.getfo(remote_path, buffer)
        except OSError as error:
            raise HostError(self.name, f"cannot read {remote_path}: {error}") from error
        finally:
            sftp.close()
        return buffer.getvalue()

    def mkdtemp(self, prefix: str = "kernelopt-") -> str:
        if "/" in prefix:
            raise ValueError(f"mkdtemp prefix {prefix!r} must not contain '/'")
        result = self.run(["mktemp", "-d", "-t", f"{prefix}XXXXXXXX"], timeout=30)
        if not result.ok:
            raise HostError(self.name, f"mktemp failed: {result.stderr.strip()}")
        return result.stdout.strip()

    def remove_tree(self, path: str) -> None:
        if path.strip() in ("", "/", "~"):
            raise ValueError(f"refusing to remove {path!r}")
        result = self.run(["rm", "-rf", "--", path], timeout=60)
        if not result.ok:
            raise HostError(self.name, f"cannot remove {path}: {result.stderr.strip()}")

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
            self._client = None

    def __repr__(self) -> str:
        t = self.target
        return f"SSHHost({self.name!r} -> {t.user}@{t.hostname}:{t.port})"


def _after_mark(text: str, mark: str) -> tuple[str, str | None]:
    """The text after the marker line and the rest of that line; the text as it
    is and None while the whole marker line has not arrived (or never will: a
    login shell that exits before our command prints nothing of ours)."""
    at = text.find(mark)
    end = text.find("\n", at) if at >= 0 else -1
    if end < 0:
        return text, None
    return text[end + 1 :], text[at + len(mark) : end]


def _strip_pgid(stderr: str, mark: str) -> tuple[str, int | None]:
    rest, line = _after_mark(stderr, mark)
    match = _PGID_FIELD.fullmatch(line or "")
    return rest, int(match.group(1)) if match else None
