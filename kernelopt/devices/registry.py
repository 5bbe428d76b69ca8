"""Gate kinds by name, and a survey over several hosts."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

from kernelopt.devices.base import DeviceStatus, Gate, tool_line
from kernelopt.devices.neuron import NEURON_BIN, NeuronGate
from kernelopt.devices.none import NoneGate
from kernelopt.devices.nvidia import NvidiaGate
from kernelopt.devices.rocm import RocmGate
from kernelopt.hosts.base import Host

GATES: dict[str, Callable[..., Gate]] = {
    "neuron": NeuronGate,
    "nvidia": NvidiaGate,
    "rocm": RocmGate,
    "none": NoneGate,
}
# Probe order for kind "auto": the first tool a host has decides its kind.
_PROBES = (("neuron", "neuron-ls"), ("nvidia", "nvidia-smi"), ("rocm", "rocm-smi"))


def make_gate(kind: str, **options: object) -> Gate:
    """A gate of `kind` ("neuron", "nvidia", "rocm", "none")."""
    try:
        factory = GATES[kind]
    except KeyError:
        raise ValueError(
            f"unknown device kind {kind!r}: expected one of {', '.join(GATES)} or auto"
        ) from None
    return factory(**options) if kind != "none" else factory()


def detect_kind(host: Host, search_path: Sequence[str] = (NEURON_BIN,)) -> str:
    """The first device tool found on `host`, else "none"."""
    for kind, tool in _PROBES:
        probe = tool_line(f"command -v {shlex.quote(tool)} >/dev/null 2>&1", search_path)
        if host.run(probe, timeout=30).returncode == 0:
            return kind
    return "none"


def survey_all(kind: str, hosts: Sequence[Host], **options: object) -> list[DeviceStatus]:
    """Every device of every host; GateError from any host propagates.

    kind "auto" picks each host's kind with detect_kind.
    """
    statuses: list[DeviceStatus] = []
    for host in hosts:
        if kind == "auto":
            search_path = options.get("search_path", (NEURON_BIN,))
            host_kind = detect_kind(host, search_path)  # type: ignore[arg-type]
        else:
            host_kind = kind
        statuses.extend(make_gate(host_kind, **options).survey(host))
    return statuses
