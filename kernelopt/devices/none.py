"""The `none` gate: the machine itself, always idle, nothing to bind."""

from __future__ import annotations

from kernelopt.devices.base import DeviceStatus
from kernelopt.hosts.base import Host


class NoneGate:
    kind = "none"

    def survey(self, host: Host) -> list[DeviceStatus]:
        return [
            DeviceStatus(
                host=host.name,
                device="machine",
                idle=True,
                utilization=None,
                memory_used=None,
                processes=(),
                binding={},
                reason="idle",
                kind=self.kind,
            )
        ]
