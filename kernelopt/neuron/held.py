"""The device a measurement runs on: a lease's or the caller's, and its cores
renumbered for the LNC the kernel runs with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from kernelopt.devices.neuron import BindingError, for_lnc, read_binding
from kernelopt.hosts.base import Host


class HeldDevice(Protocol):
    """What measuring needs from a device: where it is and how to bind to it."""

    @property
    def host(self) -> Host: ...

    @property
    def binding(self) -> dict[str, str]: ...

    @property
    def device(self) -> str: ...


@dataclass(frozen=True)
class CallersDevice:
    """A device the caller leased and will release; used here as it is."""

    host: Host
    binding: dict[str, str]
    device: str = "neuron"

    def __enter__(self) -> CallersDevice:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def bind(lease: HeldDevice, lnc: int) -> tuple[dict[str, str], dict[str, Any]]:
    """The lease's core renumbered for the LNC the kernel runs with (same chip), and
    what the record says about it: chip, logical core, physical cores, and the
    numbering the lease came in; or the lease's binding and why it cannot be used."""
    try:
        leased = read_binding(lease.binding, default_lnc=lnc)
        binding = for_lnc(lease.binding, lnc)
        bound = read_binding(binding)
    except BindingError as exc:
        error = f"cannot bind device {lease.device} for LNC {lnc}: {exc}"
        return dict(lease.binding), {"error": error}
    return binding, {
        **bound.describe(),
        "leased_cores": str(leased.core),
        "leased_lnc": leased.lnc,
    }


class NoGate:
    """The gate of a target whose caller holds the device: asked, it finds none."""

    kind = "neuron"

    def survey(self, host: Host) -> list[Any]:
        return []


NO_GATE = NoGate()
