"""Where measurements run: this process, or a leased device on a host.

An executor hands out *devices*. A device is held for a whole judgement (the
candidate and BEST measured interleaved on the same device), then released.
Without a gate (``device.kind`` none or sim, no hosts) the device is this
process itself and nothing is locked. With a gate, the device is an idle one
found by the gate, locked against other kernelopt runs; on a remote host the
tree travels as a tar and is measured there by ``python -m kernelopt.remote``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import tarfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kernelopt.measurement import FAILED, Measurement
from kernelopt.remote import parse_output
from kernelopt.targets.base import Target


class NoIdleDeviceError(RuntimeError):
    """The gate found no idle device within device.max_wait: the run stops."""


class HostFault(RuntimeError):
    """The host failed (not the candidate): the measurement is retried elsewhere."""


@dataclass
class Device:
    """One device to measure on, for as long as it is held."""

    name: str
    host_name: str = "localhost"
    env: dict[str, str] = field(default_factory=dict)
    host: Any = None  # a kernelopt.hosts Host for remote devices; None = this process
    python: str = "python3"
    activate: str | None = None

    def measure(self, target: Target, tree: Path) -> Measurement:
        if self.host is None:
            m = target.measure(tree, env=self.env)
        else:
            m = self._measure_remote(target, tree)
        return labelled(m, self)

    def reference(self, target: Target, tree: Path) -> Measurement | None:
        """The target's compiler baseline measured on this held device (no gate)."""
        if self.host is None:
            m = target.reference(tree, env=self.env)
        else:
            m = self._measure_remote(target, tree, op="reference")
        return None if m is None else labelled(m, self)

    def _measure_remote(self, target: Target, tree: Path, op: str = "measure") -> Measurement:
        spec = dict(target.spec())
        spec["env"] = self.env
        if op != "measure":
            spec["op"] = op
        host = self.host
        try:
            directory = host.mkdtemp(prefix="kernelopt-tree-")
        except Exception as exc:
            raise HostFault(f"{self.host_name}: {exc}") from exc
        try:
            unpack = host.run(
                ["tar", "-x", "-f", "-", "-C", directory], stdin=tar_tree(tree), timeout=300
            )
            if unpack.returncode != 0:
                raise HostFault(
                    f"{self.host_name}: unpacking the tree failed: {unpack.stderr.strip()}"
                )
            command = f"{shlex.quote(self.python)} -m kernelopt.remote"
            if self.activate:
                command = f". {shlex.quote(self.activate)} && {command}"
            timeout = float(spec.get("timeout_s", 600.0)) + 120.0
            result = host.run(
                command,
                cwd=directory,
                env=self.env,
                stdin=json.dumps(spec).encode(),
                timeout=timeout,
            )
            measurement = parse_output(result.stdout)
            if measurement is None:
                if result.timed_out:
                    return Measurement.failure(
                        FAILED, f"{self.host_name}: the measurement timed out"
                    )
                raise HostFault(
                    f"{self.host_name}: no measurement came back (exit {result.returncode}): "
                    + (result.stderr.strip().splitlines() or [""])[-1][:300]
                )
            return measurement
        finally:
            with contextlib.suppress(Exception):
                host.remove_tree(directory)


def labelled(m: Measurement, device: Device) -> Measurement:
    from dataclasses import replace

    return replace(m, device=m.device or device.name, host=device.host_name)


def tar_tree(tree: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(Path(tree).iterdir()):
            if path.name == ".git":
                continue
            tar.add(path, arcname=path.name)
    return buffer.getvalue()


class Executor(Protocol):
    slots: int

    def device(self) -> contextlib.AbstractContextManager[Device]: ...

    def devices(self, count: int) -> contextlib.AbstractContextManager[list[Device]]: ...


class InProcess:
    """This process is the device: no gate, no lock (command targets on `none`, `sim`)."""

    slots = 1

    def __init__(self, name: str = "local"):
        self.name = name

    @contextlib.contextmanager
    def device(self) -> Iterator[Device]:
        yield Device(self.name)

    @contextlib.contextmanager
    def devices(self, count: int) -> Iterator[list[Device]]:
        yield [Device(self.name)]


class Gated:
    """Devices found idle by a gate on a list of hosts, leased and locked."""

    def __init__(
        self,
        gate: Any,
        hosts: Sequence[Any],
        *,
        poll_s: float,
        max_wait_s: float,
        activate: str | None = None,
        python: str = "python3",
        on_wait: Callable[[Any], None] | None = None,
        lock_dir: str | None = None,
        sleep: Callable[[float], None] | None = None,
    ):
        self.gate = gate
        self.hosts = list(hosts)
        self.poll_s = poll_s
        self.max_wait_s = max_wait_s
        self.activate = activate
        self.python = python
        self.on_wait = on_wait
        # Tests and unusual hosts may keep device locks elsewhere than the default.
        self.lock_dir = lock_dir or os.environ.get("KERNELOPT_LOCK_DIR")
        self.sleep = sleep
        self._slots: int | None = None

    @property
    def slots(self) -> int:
        """How many devices the hosts have (busy or not): the batch size worth proposing."""
        if self._slots is None:
            count = 0
            for host in self.hosts:
                try:
                    count += len(self.gate.survey(host))
                except Exception:  # an unreachable host adds no slot; the gate reports it later
                    continue
            self._slots = max(1, count)
        return self._slots

    def _acquire(self, count: int) -> list[Any]:
        from kernelopt.devices.acquire import NoIdleDevice, acquire_many

        options: dict[str, Any] = {}
        if self.lock_dir:
            options["lock_dir"] = self.lock_dir
        if self.sleep:
            options["sleep"] = self.sleep
        found = acquire_many(
            self.gate,
            self.hosts,
            count=count,
            poll_s=self.poll_s,
            max_wait_s=self.max_wait_s,
            on_wait=self.on_wait,
            **options,
        )
        if isinstance(found, NoIdleDevice):
            raise NoIdleDeviceError(found.reason)
        return found

    def _device(self, lease: Any) -> Device:
        from kernelopt.hosts.local import LocalHost

        local = isinstance(lease.host, LocalHost)
        return Device(
            name=lease.device,
            host_name=lease.host.name,
            env=lease.binding,
            host=None if local else lease.host,
            activate=self.activate,
            python=self.python,
        )

    @contextlib.contextmanager
    def device(self) -> Iterator[Device]:
        lease = self._acquire(1)[0]
        try:
            yield self._device(lease)
        finally:
            lease.release()

    @contextlib.contextmanager
    def devices(self, count: int) -> Iterator[list[Device]]:
        leases = self._acquire(count)
        try:
            yield [self._device(lease) for lease in leases]
        finally:
            for lease in leases:
                lease.release()


def describe(executor: Executor) -> str:
    if isinstance(executor, Gated):
        names = ", ".join(getattr(h, "name", str(h)) for h in executor.hosts)
        return f"gate {getattr(executor.gate, 'kind', '?')} on {names}"
    return "this process"


__all__ = ["Device", "Executor", "Gated", "HostFault", "InProcess", "NoIdleDeviceError", "describe"]
