"""The ROCm gate: rocm-smi JSON; binds HIP_VISIBLE_DEVICES.

rocm-smi --json puts per-card fields under "card0", "card1", ... and the KFD
process list under "system" as "PID<n>": "name, gpus, vram, sdma, cu". That
list does not say which card a process uses, so it is shown on every card and
busy is decided per card from "GPU use (%)" and the VRAM allocation (with a
single card, any process makes it busy).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Sequence
from typing import Any

from kernelopt.devices.base import DeviceStatus, GateError, ProcessInfo, run_tool, tool_failure
from kernelopt.devices.own_pids import own_pids
from kernelopt.hosts.base import Host
from kernelopt.hosts.local import LocalHost

ARGS = ("rocm-smi", "--showuse", "--showmemuse", "--showpids", "--json")
USE_KEY = "GPU use (%)"
# Newer rocm-smi reports the allocation; older ones only "memory use" (activity).
MEMORY_KEYS = ("GPU Memory Allocated (VRAM%)", "GPU memory use (%)")
_CARD = re.compile(r"^card(\d+)$")


class RocmGate:
    kind = "rocm"

    def __init__(
        self,
        *,
        search_path: Sequence[str] = (),
        ignore_pids: frozenset[int] = frozenset(),
        busy_utilization: float = 5.0,
        busy_memory: float = 10.0,
        timeout: float = 30.0,
    ) -> None:
        self.search_path = tuple(search_path)
        self.ignore_pids = ignore_pids
        self.busy_utilization = busy_utilization
        self.busy_memory = busy_memory
        self.timeout = timeout

    def survey(self, host: Host) -> list[DeviceStatus]:
        result = run_tool(host, ARGS, search_path=self.search_path, timeout=self.timeout)
        if result.returncode != 0:
            raise tool_failure(host, ARGS, result)
        where = f"`{shlex.join(ARGS)}` on host {host.name}"
        try:
            data = json.loads(result.stdout)
        except json.JSONDecodeError as error:
            raise GateError(f"{where} did not print JSON ({error.msg})") from None
        if not isinstance(data, dict):
            raise GateError(f"{where}: expected a JSON object keyed by card")
        ignored = self.ignore_pids | (own_pids() if isinstance(host, LocalHost) else frozenset())
        processes = _processes(data.get("system") or {}, where, ignored)
        cards = sorted(
            ((int(m.group(1)), key) for key in data if (m := _CARD.match(key))),
        )
        if not cards:
            raise GateError(f"{where}: no 'cardN' entries (keys: {', '.join(sorted(data))})")
        # With one card every KFD process is necessarily on it.
        sole = len(cards) == 1
        return [
            self._status(host, n, data[key], f"{where}, {key}", processes, sole) for n, key in cards
        ]

    def _status(
        self,
        host: Host,
        number: int,
        card: Any,
        where: str,
        processes: tuple[ProcessInfo, ...],
        sole: bool,
    ) -> DeviceStatus:
        if not isinstance(card, dict):
            raise GateError(f"{where}: expected an object of fields")
        if USE_KEY not in card:
            raise GateError(f"{where}: missing key '{USE_KEY}'")
        utilization = _percent(card[USE_KEY], USE_KEY, where)
        memory_key = next((k for k in MEMORY_KEYS if k in card), None)
        if memory_key is None:
            raise GateError(f"{where}: missing key '{MEMORY_KEYS[0]}'")
        memory = _percent(card[memory_key], memory_key, where)
        # Unknown is busy: "N/A", NaN or out of range never passes for idle.
        use_ok, memory_ok = _usable(utilization), _usable(memory)
        unknown = [
            f"{key} {card[key]!r}"
            for key, ok in ((USE_KEY, use_ok), (memory_key, memory_ok))
            if not ok
        ]
        utilization = utilization if use_ok else None
        memory = memory if memory_ok else None
        reason = "idle"
        if sole and processes:
            names = ", ".join(f"{p.command} (pid {p.pid})" for p in processes)
            reason = f"compute processes running: {names}"
        elif unknown:
            reason = f"unknown: {' and '.join(unknown)} is not a percentage"
        elif utilization is not None and utilization > self.busy_utilization:
            reason = f"GPU use {utilization:.0f}% > {self.busy_utilization:g}%"
        elif memory is not None and memory > self.busy_memory:
            reason = f"VRAM {memory:.0f}% allocated > {self.busy_memory:g}%"
        return DeviceStatus(
            host=host.name,
            device=str(number),
            idle=reason == "idle",
            utilization=utilization,
            memory_used=memory,
            processes=processes,
            binding={"HIP_VISIBLE_DEVICES": str(number)},
            reason=reason,
            kind=self.kind,
        )


def _usable(percent: float | None) -> bool:
    return percent is not None and math.isfinite(percent) and 0 <= percent <= 100


def _percent(value: Any, key: str, where: str) -> float | None:
    text = str(value).strip().rstrip("%")
    if text.upper() in ("N/A", "NA", ""):
        return None
    try:
        return float(text)
    except ValueError:
        raise GateError(f"{where}: '{key}' value {value!r} is not a number") from None


def _processes(system: Any, where: str, ignored: frozenset[int]) -> tuple[ProcessInfo, ...]:
    if not isinstance(system, dict):
        raise GateError(f"{where}: 'system' should be an object")
    found = []
    for key, value in system.items():
        if not key.startswith("PID"):
            continue
        try:
            pid = int(key[3:])
        except ValueError:
            raise GateError(f"{where}: process key {key!r} should be PID<number>") from None
        if pid in ignored:
            continue
        fields = [f.strip() for f in str(value).split(",")]
        found.append(ProcessInfo(pid, fields[0], ", ".join(fields[1:])))
    return tuple(found)
