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


class AutoGate:
    """Surveys each host with the gate of the first device tool it has.

    The kind found for a host is remembered: tools do not come and go mid-run.
    """

    kind = "auto"

    def __init__(self, **options: object) -> None:
        self.options = options
        self._by_host: dict[str, Gate] = {}

    def gate_for(self, host: Host) -> Gate:
        if host.name not in self._by_host:
            search_path = self.options.get("search_path", (NEURON_BIN,))
            kind = detect_kind(host, search_path)  # type: ignore[arg-type]
            self._by_host[host.name] = make_gate(kind, **self.options)
        return self._by_host[host.name]

    def survey(self, host: Host) -> list[DeviceStatus]:
        return self.gate_for(host).survey(host)


def make_gate(kind: str, **options: object) -> Gate:
    """A gate of `kind` ("neuron", "nvidia", "rocm", "none", or "auto")."""
    if kind == "auto":
        return AutoGate(**options)
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

    kind "auto" picks each host's kind from the device tool it has.
    """
    gate = make_gate(kind, **options)
    return [status for host in hosts for status in gate.survey(host)]
