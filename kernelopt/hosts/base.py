"""The Host interface: where commands run and files travel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class CommandResult:
    """What one command did. A timeout is a result (timed_out=True), never a hang."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class HostError(RuntimeError):
    """The host itself failed (connection refused, transport dropped, file missing).

    Distinct from a command that ran and failed, which is a CommandResult.
    """

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"host {host}: {message}")
        self.host = host


@runtime_checkable
class Host(Protocol):
    """A machine that runs commands.

    Contract (tests/hosts/test_hosts_contract.py runs it against every impl):
    - `run` with a list quotes every element; with a str runs it as a POSIX
      shell command line. `env` adds to (not replaces) the host's environment.
    - `timeout` kills the command's whole process group and returns
      timed_out=True with the output captured so far.
    - Paths are plain POSIX paths on the host; nothing reaches a shell unquoted.
    """

    name: str

    def run(
        self,
        argv: Sequence[str] | str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> CommandResult: ...

    def put_bytes(self, data: bytes, remote_path: str) -> None: ...

    def get_bytes(self, remote_path: str) -> bytes: ...

    def mkdtemp(self, prefix: str = "kernelopt-") -> str: ...

    def remove_tree(self, path: str) -> None: ...

    def close(self) -> None: ...
