"""Talking to the driver on a host: ship a tree, run a driver command, fetch files.

Every value that reaches the host's shell is quoted; the Neuron environment
(device.neuron.activate) is sourced first so the SDK's tools and modules are
the ones the driver finds.
"""

from __future__ import annotations

import io
import json
import shlex
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernelopt.hosts.base import Host, HostError
from kernelopt.hosts.shell import shell_line
from kernelopt.neuron.facts import NEURON_BIN

_SKIP = {".git", "__pycache__", ".pytest_cache"}


# Layout of an attempt's host directory: the candidate's files, and the
# folder the driver works in and leaves NEFF, NTFF and logs in.
TREE = "tree"
OUT = "out"


def pack_tree(tree: Path, replace: Mapping[str, str] | None = None) -> bytes:
    """The tree under ``tree/`` plus an empty ``out/``, as tar bytes, without git
    metadata or caches; ``replace`` maps relative paths to the text shipped instead
    of the file's (a kernel rendered for the host's SDK)."""
    swapped = {f"{TREE}/{Path(k).as_posix()}": v for k, v in (replace or {}).items()}

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        skip = _SKIP & set(Path(info.name).parts) or info.name in swapped
        return None if skip else info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for child in sorted(Path(tree).iterdir()):
            if child.name not in _SKIP:
                tar.add(child, arcname=f"{TREE}/{child.name}", filter=keep)
        for name, text in swapped.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        out = tarfile.TarInfo(OUT)
        out.type, out.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(out)
    return buffer.getvalue()


def ship_tree(host: Host, data: bytes) -> str:
    """Unpack ``data`` into a fresh directory on ``host``; the caller removes it."""
    directory = host.mkdtemp(prefix="kernelopt-neuron-")
    result = host.run(["tar", "-x", "-f", "-", "-C", directory], stdin=data, timeout=300)
    if not result.ok:
        host.remove_tree(directory)
        raise HostError(host.name, f"unpacking the tree into {directory} failed: {result.stderr}")
    return directory


def _source(script: str) -> str:
    # A leading ~/ must survive quoting, so it becomes "$HOME"/.
    if script.startswith("~/"):
        return f'. "$HOME"/{shlex.quote(script[2:])}'
    return f". {shlex.quote(script)}"


def driver_line(
    args: Sequence[str],
    *,
    python: str,
    activate: str | None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> str:
    """The shell line running ``python -m kernelopt.neuron.driver ARGS`` on a host.

    The SDK's bin dir goes on PATH before the activate script runs, so an
    environment the script sets up wins over the system install.
    """
    prefix = f'PATH={shlex.quote(NEURON_BIN)}:"$PATH"; export PATH; '
    if activate:
        prefix += f"{_source(activate)} && "
    return prefix + shell_line([python, "-m", "kernelopt.neuron.driver", *args], env=env, cwd=cwd)


def run_driver(
    host: Host,
    args: Sequence[str],
    *,
    python: str,
    activate: str | None,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    """The driver's record, or a failed record saying why there is none."""
    line = driver_line(args, python=python, activate=activate, env=env, cwd=cwd)
    try:
        result = host.run(line, timeout=timeout)
    except HostError as exc:
        return {"status": "failed", "error": str(exc)}
    for text in reversed(result.stdout.strip().splitlines()):
        if text.startswith("{"):
            try:
                record = json.loads(text)
            except json.JSONDecodeError:
                break
            if isinstance(record, dict) and "status" in record:
                return record
            break
    if result.timed_out:
        return {
            "status": "failed",
            "error": f"the driver on host {host.name} did not finish within {timeout:g}s",
            "timed_out": True,
        }
    tail = (result.stderr or result.stdout).strip()[-2000:]
    return {
        "status": "failed",
        "error": f"the driver on host {host.name} printed no record (exit code "
        f"{result.returncode}): {tail or 'no output'}",
    }


def fetch(host: Host, remote: Mapping[str, str], local_dir: Path) -> dict[str, str]:
    """Copy the named host files into ``local_dir``; missing ones are skipped."""
    local_dir.mkdir(parents=True, exist_ok=True)
    found: dict[str, str] = {}
    for name, path in remote.items():
        try:
            data = host.get_bytes(path)
        except HostError:
            continue
        target = local_dir / Path(path).name
        target.write_bytes(data)
        found[name] = str(target)
    return found
