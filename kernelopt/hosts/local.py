"""LocalHost: commands on this machine, each in its own process group."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import kernelopt.hosts.children as children
from kernelopt.hosts.base import CommandResult, HostError
from kernelopt.hosts.shell import check_env_names

# After killing a group, output still buffered in the pipes is collected for at
# most this long; a descendant that escaped the group must not hang us.
_DRAIN_AFTER_KILL_S = 5.0


class LocalHost:
    """This machine. No shell is involved for list argv, so nothing needs quoting."""

    def __init__(self, name: str = "localhost") -> None:
        self.name = name

    def run(
        self,
        argv: Sequence[str] | str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> CommandResult:
        check_env_names(env)
        args = ["/bin/sh", "-c", argv] if isinstance(argv, str) else [str(a) for a in argv]
        if not args:
            raise ValueError("empty argv: expected at least the program name")
        started = time.monotonic()
        mark = children.new_mark()
        if cwd is not None and not Path(cwd).is_dir():
            return CommandResult(2, "", f"cd: {cwd}: No such file or directory\n", False, 0.0)
        try:
            process = subprocess.Popen(
                args,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env={**os.environ, **(env or {}), children.MARK: children.marked_env(mark)},
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError) as error:
            code = 127 if isinstance(error, FileNotFoundError) else 126
            return CommandResult(code, "", f"{args[0]}: {error.strerror}\n", False, 0.0)
        timed_out = False
        try:
            children.started(process.pid, mark)
            out, err = process.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process.pid)
            children.kill_marked(mark)  # what left the group (setsid) goes too
            try:
                out, err = process.communicate(timeout=_DRAIN_AFTER_KILL_S)
            except subprocess.TimeoutExpired:
                process.kill()
                out, err = b"", b""
        except BaseException:  # Ctrl-C or an error here: the group must not run on alone
            _kill_group(process.pid)
            children.kill_marked(mark)
            raise
        finally:
            children.ended(process.pid)
        return CommandResult(
            returncode=process.returncode if process.returncode is not None else -9,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
        )

    def put_bytes(self, data: bytes, remote_path: str) -> None:
        try:
            Path(remote_path).write_bytes(data)
        except OSError as error:
            raise HostError(self.name, f"cannot write {remote_path}: {error.strerror}") from error

    def get_bytes(self, remote_path: str) -> bytes:
        try:
            return Path(remote_path).read_bytes()
        except OSError as error:
            raise HostError(self.name, f"cannot read {remote_path}: {error.strerror}") from error

    def mkdtemp(self, prefix: str = "kernelopt-") -> str:
        return tempfile.mkdtemp(prefix=prefix)

    def remove_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        """Nothing to release; present so every Host closes the same way."""

    def __repr__(self) -> str:
        return f"LocalHost({self.name!r})"


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
