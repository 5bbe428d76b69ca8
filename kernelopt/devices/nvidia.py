"""The NVIDIA gate: nvidia-smi CSV queries; binds CUDA_VISIBLE_DEVICES by UUID."""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence

from kernelopt.devices.base import DeviceStatus, GateError, ProcessInfo, run_tool, tool_failure
from kernelopt.devices.own_pids import own_pids
from kernelopt.hosts.base import Host
from kernelopt.hosts.local import LocalHost

GPU_QUERY = (
    "nvidia-smi",
    "--query-gpu=index,uuid,utilization.gpu,memory.used,memory.total",
    "--format=csv,noheader,nounits",
)
APP_QUERY = (
    "nvidia-smi",
    "--query-compute-apps=gpu_uuid,pid,process_name,used_memory",
    "--format=csv,noheader,nounits",
)


class NvidiaGate:
    kind = "nvidia"

    def __init__(
        self,
        *,
        search_path: Sequence[str] = (),
        ignore_pids: frozenset[int] = frozenset(),
        busy_utilization: float = 5.0,
        timeout: float = 30.0,
    ) -> None:
        self.search_path = tuple(search_path)
        self.ignore_pids = ignore_pids
        self.busy_utilization = busy_utilization
        self.timeout = timeout

    def _query(self, host: Host, argv: Sequence[str]) -> list[list[str]]:
        result = run_tool(host, argv, search_path=self.search_path, timeout=self.timeout)
        if result.returncode != 0:
            raise tool_failure(host, argv, result)
        return [
            [cell.strip() for cell in line.split(",")]
            for line in result.stdout.splitlines()
            if line.strip()
        ]

    def survey(self, host: Host) -> list[DeviceStatus]:
        ignored = self.ignore_pids | (own_pids() if isinstance(host, LocalHost) else frozenset())
        gpus = self._query(host, GPU_QUERY)
        apps = self._query(host, APP_QUERY)
        by_uuid: dict[str, list[ProcessInfo]] = {}
        for number, row in enumerate(apps, start=1):
            where = f"`{shlex.join(APP_QUERY)}` on host {host.name}, line {number}"
            _expect_columns(row, 4, where)
            pid = _integer(row[1], "pid", where)
            if pid in ignored:
                continue
            memory = _number(row[3], "used_memory", where)
            detail = "" if memory is None else f"{memory:g} MiB"
            by_uuid.setdefault(row[0], []).append(ProcessInfo(pid, row[2], detail))
        statuses = []
        for number, row in enumerate(gpus, start=1):
            where = f"`{shlex.join(GPU_QUERY)}` on host {host.name}, line {number}"
            _expect_columns(row, 5, where)
            index = str(_integer(row[0], "index", where))
            uuid = row[1]
            utilization = _number(row[2], "utilization.gpu", where)
            if utilization is not None and not (math.isfinite(utilization) and utilization <= 100):
                utilization = None
            memory = _number(row[3], "memory.used", where)
            processes = tuple(by_uuid.get(uuid, []))
            reason = "idle"
            if processes:
                names = ", ".join(f"{p.command} (pid {p.pid})" for p in processes)
                reason = f"compute processes attached: {names}"
            elif utilization is None or utilization < 0:
                # Unknown is busy: "[N/A]", NaN or out of range never passes for idle.
                utilization = None
                reason = f"utilization unknown: utilization.gpu {row[2]!r} is not a percentage"
            elif utilization > self.busy_utilization:
                reason = f"utilization {utilization:.0f}% > {self.busy_utilization:g}%"
            statuses.append(
                DeviceStatus(
                    host=host.name,
                    device=index,
                    idle=reason == "idle",
                    utilization=utilization,
                    memory_used=memory,
                    processes=processes,
                    # The UUID survives CUDA_DEVICE_ORDER differences; the index does not.
                    binding={"CUDA_VISIBLE_DEVICES": uuid},
                    reason=reason,
                    kind=self.kind,
                )
            )
        return statuses


def _expect_columns(row: list[str], count: int, where: str) -> None:
    if len(row) != count:
        raise GateError(f"{where}: expected {count} comma-separated values, got {len(row)}")


def _integer(text: str, name: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise GateError(f"{where}: {name} {text!r} is not an integer") from None


def _number(text: str, name: str, where: str) -> float | None:
    """nvidia-smi prints "[N/A]" or "[Not Supported]" for fields a GPU lacks."""
    if text.startswith("[") or text in ("", "N/A"):
        return None
    try:
        return float(text)
    except ValueError:
        raise GateError(f"{where}: {name} {text!r} is not a number") from None
