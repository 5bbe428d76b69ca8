"""The `none` gate: the machine itself, always idle, nothing to bind."""

from __future__ import annotations

from kernelopt.devices.base import DeviceStatus
from kernelopt.hosts.base import Host


class NoneGate:
    kind = "none"

    def survey(self, host: Host) -> list[DeviceStatus]:
        # Even with nothing to inspect, an unreachable host must not look idle:
        # one trivial command raises HostError for it.
        host.run(["true"], timeout=30)
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
