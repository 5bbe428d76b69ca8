"""Measuring on a Ray cluster: Ray schedules the devices, kernelopt keeps deciding.

A device is a Ray actor asking for one device's worth of resources
(``neuron_cores`` per the logical-core config, ``GPU``, or ``CPU`` for command
targets without a device). Ray queues it while the cluster is full. On its
node the actor runs the same gate as the hosts executor, so processes outside
Ray still count as busy and other kernelopt runs are kept off by the same
locks; then it measures shipped trees (tar bytes) with the same target code as
``kernelopt.remote``. The actor lives for one judgement and is killed after.

A lost node, a killed actor or any Ray error is a ``HostFault`` (the runner
retries once elsewhere). Every wait on Ray has a timeout, so a dead node can
never hang a run.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelopt.devices.acquire import WaitNotice
from kernelopt.devices.base import DeviceStatus, ProcessInfo
from kernelopt.executor import (
    Device,
    HostFault,
    NoIdleDeviceError,
    labelled,
    tar_tree,
)
from kernelopt.measurement import FAILED, Measurement
from kernelopt.program import Program, RayConfig
from kernelopt.targets.base import Target

INSTALL_HINT = "pip install -e '.[ray]'"
# Kinds whose device is the Ray resource itself: there is no device tool to ask.
_GATELESS = ("none", "sim")
# Releasing a lock and killing an actor are quick; a node that does not answer is gone.
_RELEASE_TIMEOUT_S = 10.0


class RayExecutorError(ValueError):
    """The Ray executor cannot start as configured; the message says what to change."""


def require_ray() -> Any:
    """The ray module, or a clear error naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise RayExecutorError(
            f"device.executor ray needs Ray, which is not installed: {INSTALL_HINT}"
        ) from None
    return ray


def default_resources(kind: str, lnc: int = 1) -> dict[str, float]:
    """One device's worth of Ray resources for a device kind."""
    if kind == "neuron":
        # A logical core spans lnc physical NeuronCores; Ray counts physical ones.
        return {"neuron_cores": float(lnc)}
    if kind in ("nvidia", "rocm"):
        return {"GPU": 1.0}
    return {"CPU": 1.0}


def actor_options(resources: Mapping[str, float]) -> dict[str, Any]:
    """Ray ``.options()`` asking for ``resources`` and nothing else (CPU 0 unless named)."""
    options: dict[str, Any] = {"num_cpus": 0.0, "max_restarts": 0, "max_task_retries": 0}
    custom: dict[str, float] = {}
    for name, amount in resources.items():
        if name == "CPU":
            options["num_cpus"] = amount
        elif name == "GPU":
            options["num_gpus"] = amount
        else:
            custom[name] = amount
    if custom:
        options["resources"] = custom
    return options


def slots_for(cluster: Mapping[str, float], resources: Mapping[str, float]) -> int:
    """How many devices' worth of ``resources`` the cluster holds in total."""
    counts = [
        math.floor(cluster.get(name, 0.0) / amount + 1e-9) for name, amount in resources.items()
    ]
    return min(counts) if counts else 0


@dataclass(frozen=True)
class DeviceInfo:
    """What a started actor reports: where it runs and the device it holds."""

    host: str
    device: str
    binding: dict[str, str]
    pid: int
    no_idle: str = ""  # set when the node's gate found no idle device in time


class NodeMeasurer:
    """The Ray actor body: holds one device on its node for one judgement."""

    def __init__(self, gate_kind: str, poll_s: float, max_wait_s: float, lock_dir: str | None):
        self.gate_kind = gate_kind
        self.poll_s = poll_s
        self.max_wait_s = max_wait_s
        self.lock_dir = lock_dir
        self._lease: Any = None

    def ready(self) -> DeviceInfo:
        host = socket.gethostname()
        if self.gate_kind in _GATELESS:
            return DeviceInfo(host, _assigned_name(), {}, os.getpid())
        from kernelopt.devices.acquire import NoIdleDevice, acquire
        from kernelopt.devices.registry import make_gate
        from kernelopt.hosts.local import LocalHost

        options: dict[str, Any] = {"lock_dir": self.lock_dir} if self.lock_dir else {}
        found = acquire(
            make_gate(self.gate_kind),
            [LocalHost(host)],
            poll_s=self.poll_s,
            max_wait_s=self.max_wait_s,
            **options,
        )
        if isinstance(found, NoIdleDevice):
            return DeviceInfo(host, "", {}, os.getpid(), no_idle=found.reason)
        self._lease = found
        return DeviceInfo(host, found.device, found.binding, os.getpid())

    def measure(self, spec: dict[str, Any], tree: bytes, env: dict[str, str]) -> dict[str, Any]:
        """The Measurement (as JSON) of the shipped tree; failures come back as data."""
        from kernelopt.targets.base import target_from_spec

        try:
            with tempfile.TemporaryDirectory(prefix="kernelopt-tree-") as directory:
                _unpack(tree, Path(directory))
                target = target_from_spec(spec)
                if spec.get("op") == "reference":
                    found = target.reference(Path(directory), env=env)
                    measurement = found or Measurement.failure(FAILED, "no reference")
                else:
                    measurement = target.measure(Path(directory), env=env)
        except Exception as exc:  # the candidate's problem, not the node's
            measurement = Measurement.failure(
                FAILED, f"measurement on the node failed: {type(exc).__name__}: {exc}"
            )
        return measurement.to_json()

    def release(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None


def _assigned_name() -> str:
    """``ray:<resource>=<ids>`` for the accelerators Ray gave this actor, else ``ray:cpu``."""
    import ray

    ids = ray.get_runtime_context().get_accelerator_ids()
    held = [f"{name}={','.join(map(str, found))}" for name, found in sorted(ids.items()) if found]
    return "ray:" + (";".join(held) or "cpu")


def _unpack(data: bytes, directory: Path) -> None:
    import io

    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(directory, filter="data")  # no absolute paths, links out, devices


@dataclass
class RayDevice(Device):
    """A device held by a Ray actor; ``measure`` ships the tree to the actor's node."""

    actor: Any = None
    call_timeout_s: float = 120.0  # added to the target's own timeout for each call
    trees: dict[Path, Any] = field(default_factory=dict)  # tree -> object ref, shipped once

    def reference(self, target: Target, tree: Path) -> Measurement | None:
        """The compiler baseline on this actor's device (the spec says which op)."""
        return self.measure(target, tree, op="reference")

    def measure(self, target: Target, tree: Path, op: str = "measure") -> Measurement:
        ray = require_ray()
        spec = {**target.spec(), **({"op": op} if op != "measure" else {})}
        timeout = float(spec.get("timeout_s", 600.0)) + self.call_timeout_s
        packed = None if Path(tree) in self.trees else tar_tree(Path(tree))
        try:
            if packed is not None:
                self.trees[Path(tree)] = ray.put(packed)
            call = self.actor.measure.remote(spec, self.trees[Path(tree)], self.env)
            result = ray.get(call, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise HostFault(
                f"{self.host_name}: no answer from the Ray worker within {timeout:g}s"
            ) from None
        except Exception as exc:  # Ray errors, and a lost connection to the cluster
            raise HostFault(f"{self.host_name}: {_first_line(exc)}") from None
        return labelled(Measurement.from_json(result), self)


def _first_line(exc: BaseException) -> str:
    """A one-line summary; for an error raised inside a Ray task, the task's own error."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


class RayExecutor:
    """Devices as Ray actors, each asking for one device's worth of resources."""

    def __init__(
        self,
        config: RayConfig,
        *,
        gate_kind: str,
        resources: Mapping[str, float],
        poll_s: float = 600.0,
        max_wait_s: float = 3600.0,
        lock_dir: str | None = None,
        gather_s: float = 2.0,
        on_wait: Callable[[WaitNotice], None] | None = None,
    ):
        self.ray = require_ray()
        self.config = config
        self.gate_kind = gate_kind
        self.resources = dict(resources)
        self.poll_s = poll_s
        self.max_wait_s = max_wait_s
        # Tests and unusual nodes may keep device locks elsewhere than the default.
        self.lock_dir = lock_dir or os.environ.get("KERNELOPT_LOCK_DIR")
        self.gather_s = gather_s
        self.on_wait = on_wait
        self._actor_class: Any = None
        self._slots = 1

    def connect(self) -> RayExecutor:
        """Join (or start) the cluster and check it has the resources a device needs."""
        join_cluster(self.config)
        if slots_for(self.ray.cluster_resources(), self.resources) == 0:
            have = ", ".join(f"{k}={v:g}" for k, v in sorted(self._cluster().items())) or "none"
            raise RayExecutorError(
                f"the Ray cluster has no device's worth of {self.resources} "
                f"(it has {have}); set device.ray.resources_per_device"
            )
        self._actor_class = self.ray.remote(NodeMeasurer)
        return self

    def _cluster(self) -> dict[str, float]:
        return {k: v for k, v in self.ray.cluster_resources().items() if not k.startswith("node:")}

    @property
    def slots(self) -> int:
        """Devices in the cluster (busy or not): the batch size worth proposing."""
        try:
            # At least one, so that a cluster shrunk to nothing still tries and reports why.
            self._slots = max(1, slots_for(self.ray.cluster_resources(), self.resources))
        except Exception:  # the cluster cannot answer now: the devices() call will say why
            pass
        return self._slots

    @contextlib.contextmanager
    def device(self) -> Iterator[Device]:
        with self.devices(1) as held:
            yield held[0]

    @contextlib.contextmanager
    def devices(self, count: int) -> Iterator[list[Device]]:
        """Up to ``count`` devices, as soon as at least one is held."""
        if self._actor_class is None:
            self.connect()
        actors: list[Any] = []
        held: list[Device] = []
        try:
            try:
                actors.extend(self._start() for _ in range(max(1, count)))
                held = self._ready(actors)
            except (HostFault, NoIdleDeviceError):
                raise
            except Exception as exc:  # Ray errors, and a lost connection to the cluster
                raise HostFault(f"the Ray cluster: {_first_line(exc)}") from None
            yield held
        finally:
            holding = [d.actor for d in held if isinstance(d, RayDevice)]
            for actor in actors:
                # Only an actor that started can hold a lock; one still queued is just ended.
                self._stop(actor, release=any(actor is h for h in holding))

    def _start(self) -> Any:
        options = actor_options(self.resources)
        return self._actor_class.options(**options).remote(
            self.gate_kind, self.poll_s, self.max_wait_s, self.lock_dir
        )

    def _ready(self, actors: list[Any]) -> list[Device]:
        ray = self.ray
        calls = {actor.ready.remote(): actor for actor in actors}
        # Ray queues the actors while the cluster is full; the node's gate may wait too.
        limit = self.max_wait_s + self.config.task_timeout_s
        done = self._wait_first(list(calls), limit)
        if not done:
            raise NoIdleDeviceError(
                f"no Ray worker with {self.resources} started within {limit:g}s "
                "(the cluster is full or has lost the nodes with these resources)"
            )
        others = [ref for ref in calls if ref not in done]
        if others:
            more, _ = ray.wait(others, num_returns=len(others), timeout=self.gather_s)
            done = [*done, *more]
        devices: list[Device] = []
        problems: list[str] = []
        no_idle: list[str] = []
        for ref in done:
            try:
                info: DeviceInfo = ray.get(ref, timeout=self.config.task_timeout_s)
            except ray.exceptions.RayError as exc:
                problems.append(_first_line(exc))
                continue
            if info.no_idle:
                no_idle.append(f"{info.host}: {info.no_idle}")
                continue
            devices.append(
                RayDevice(
                    name=info.device,
                    host_name=info.host,
                    env=dict(info.binding),
                    actor=calls[ref],
                    call_timeout_s=self.config.task_timeout_s,
                )
            )
        if devices:
            return devices
        if no_idle and not problems:
            raise NoIdleDeviceError("; ".join(no_idle))
        raise HostFault("no Ray worker could hold a device: " + "; ".join(problems + no_idle))

    def _wait_first(self, refs: list[Any], limit: float) -> list[Any]:
        started = time.monotonic()
        while True:
            waited = time.monotonic() - started
            pause = min(self.poll_s, limit - waited)
            if pause <= 0:
                return []
            done, _ = self.ray.wait(refs, num_returns=1, timeout=pause)
            if done:
                return list(done)
            if self.on_wait is not None:
                reason = (
                    f"no Ray worker with {self.resources} has started yet (every device in "
                    "the cluster is taken, or the node's gate is waiting for an idle one)"
                )
                self.on_wait(WaitNotice(reason, time.monotonic() - started, self.poll_s))

    def _stop(self, actor: Any, *, release: bool) -> None:
        """Release the node's lock if the actor holds one and answers, then end the actor."""
        ray = self.ray
        if release:
            with contextlib.suppress(Exception):
                ray.get(actor.release.remote(), timeout=_RELEASE_TIMEOUT_S)
        with contextlib.suppress(Exception):
            ray.kill(actor, no_restart=True)


def join_cluster(config: RayConfig) -> None:
    """Connect this process to the configured cluster, or start a local one, once."""
    ray = require_ray()
    if ray.is_initialized():
        return
    try:
        if config.address == "local":
            ray.init(
                address="local",
                num_cpus=config.num_cpus,
                include_dashboard=False,
                log_to_driver=False,
            )
        else:
            ray.init(address=config.address, log_to_driver=False)
    except Exception as exc:
        raise RayExecutorError(
            f"cannot join the Ray cluster at device.ray.address {config.address!r}: "
            f"{_first_line(exc)}"
        ) from None


def resources_for(program: Program, device: str) -> dict[str, float]:
    configured = program.device.ray.resources_per_device
    if configured:
        return dict(configured)
    return default_resources(device, program.device.neuron.lnc)


def ray_executor_for(program: Program, device: str, reporter: Any = None) -> RayExecutor:
    """The executor for a program with ``device.executor: ray``, connected; waits are
    reported to ``reporter``."""

    def on_wait(notice: WaitNotice) -> None:
        if reporter is not None:
            reporter.event(
                "waiting",
                reason=notice.reason,
                waited_s=notice.waited_s,
                next_poll_s=notice.next_poll_s,
            )

    executor = RayExecutor(
        program.device.ray,
        gate_kind=device,
        resources=resources_for(program, device),
        poll_s=program.device.poll_s,
        max_wait_s=program.device.max_wait_s,
        on_wait=on_wait,
    )
    return executor.connect()


def _survey_node(kind: str) -> list[dict[str, Any]]:
    from kernelopt.devices.registry import make_gate
    from kernelopt.hosts.local import LocalHost

    gate = make_gate("none" if kind in _GATELESS else kind)
    return [s.as_dict() for s in gate.survey(LocalHost(socket.gethostname()))]


def ray_survey(program: Program, *, timeout_s: float | None = None) -> list[DeviceStatus]:
    """Every device of every live node, surveyed by one gate task pinned to each node.

    A node whose survey fails or does not answer within ``timeout_s`` (default
    device.ray.task_timeout) shows as one busy entry saying why.
    """
    ray = require_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    kind = program.device.kind
    join_cluster(program.device.ray)
    limit = timeout_s if timeout_s is not None else program.device.ray.task_timeout_s
    task = ray.remote(_survey_node)
    calls = []
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        where = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        ref = task.options(num_cpus=0, scheduling_strategy=where, max_retries=0).remote(kind)
        calls.append((node.get("NodeManagerHostname") or node["NodeManagerAddress"], ref))
    statuses: list[DeviceStatus] = []
    for host, ref in calls:
        try:
            statuses.extend(_status(d) for d in ray.get(ref, timeout=limit))
        except Exception as exc:  # one bad node must not hide the others
            statuses.append(
                DeviceStatus(
                    host, "-", False, None, None, (), {}, f"survey failed: {_first_line(exc)}", kind
                )
            )
    return statuses


def _status(data: dict[str, Any]) -> DeviceStatus:
    processes = tuple(
        ProcessInfo(p["pid"], p["command"], p.get("detail", "")) for p in data["processes"]
    )
    return DeviceStatus(
        host=data["host"],
        device=data["device"],
        idle=data["idle"],
        utilization=data["utilization"],
        memory_used=data["memory_used"],
        processes=processes,
        binding=dict(data["binding"]),
        reason=data["reason"],
        kind=data["kind"],
    )


__all__ = [
    "INSTALL_HINT",
    "RayDevice",
    "RayExecutor",
    "RayExecutorError",
    "default_resources",
    "join_cluster",
    "ray_executor_for",
    "ray_survey",
    "require_ray",
    "slots_for",
]
