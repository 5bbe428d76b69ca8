"""Building POSIX shell command lines in which every value is quoted."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_env_names(env: Mapping[str, str] | None) -> None:
    """Reject names a shell would misread; values are quoted so any value is safe."""
    for name in env or {}:
        if not _ENV_NAME.match(name):
            raise ValueError(
                f"invalid environment variable name {name!r}: expected letters, digits "
                "and underscores, not starting with a digit"
            )


def command_text(argv: Sequence[str] | str) -> str:
    """A list becomes a quoted command line; a str is taken as a command line already."""
    if isinstance(argv, str):
        return argv
    if not argv:
        raise ValueError("empty argv: expected at least the program name")
    return shlex.join(str(part) for part in argv)


def shell_line(
    argv: Sequence[str] | str,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> str:
    """One line that changes directory, sets env and runs the command.

    A str command runs under `sh -c` so that its own operators (`&&`, `|`)
    stay inside it and cannot interact with our `cd ... &&` prefix.
    """
    check_env_names(env)
    if isinstance(argv, str):
        program = f"sh -c {shlex.quote(argv)}"
    else:
        program = command_text(argv)
    prefix = ""
    if cwd is not None:
        prefix = f"cd {shlex.quote(cwd)} && "
    assignments = " ".join(f"{name}={shlex.quote(value)}" for name, value in (env or {}).items())
    if assignments:
        return f"{prefix}exec env {assignments} {program}"
    return f"{prefix}exec {program}"
