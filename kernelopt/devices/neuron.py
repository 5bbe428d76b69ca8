"""The Neuron gate: devices from neuron-ls, utilization from neuron-monitor,
leftover compilers from the host's process table.

Binding choice: the unit kernelopt locks is a whole Neuron device (chip), so no
other kernelopt measurement shares its HBM bandwidth, and a measurement is
bound to the chip's first logical NeuronCore.

Core numbering: `neuroncore_ids` in neuron-ls's JSON are *logical* ids in the
host's current LNC numbering, the ids NEURON_RT_VISIBLE_CORES takes (Trn2's
default LNC=2: four per chip, device 0 -> 0..3, device 15 -> 60..63; LNC=1:
eight per chip; aws-neuron-sdk tools/neuron-sys-tools/neuron-ls.rst and
about-neuron/arch/neuron-features/logical-neuroncore-config.rst). A binding
therefore carries the LNC its ids are numbered in (NEURON_LOGICAL_NC_CONFIG),
and `for_lnc` renumbers it for the LNC a kernel runs with, keeping the chip.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelopt.devices.base import (
    DeviceStatus,
    GateError,
    ProcessInfo,
    run_tool,
    tool_failure,
    tool_line,
)
from kernelopt.devices.own_compiles import in_flight
from kernelopt.devices.own_pids import own_pids
from kernelopt.hosts.base import CommandResult, Host
from kernelopt.hosts.local import LocalHost

NEURON_BIN = "/opt/aws/neuron/bin"
NEW_ARGS = ("neuron-ls", "--output-format", "json")
OLD_ARGS = ("neuron-ls", "--json-output")
_TOOL_COMMANDS = ("neuron-ls", "neuron-top", "neuron-monitor")
# A compiler process left over from an earlier compile (neuronx-cc, or its walrus
# backend) that still holds a device makes the runtime fail there with NRT_FAILURE,
# so it counts as a user of the device whatever runtime version neuron-ls shows for it.
_COMPILER_COMMANDS = ("neuronx-cc", "walrus", "walrus_driver")

# Every process of the host as "PID ARGS" lines: ps where it exists, else /proc. -ww:
# procps cuts each line to $COLUMNS when that is set, even into a pipe, which would
# cut a compiler's path before its name.
PROCESS_TABLE = (
    "ps -ww -eo pid=,args= 2>/dev/null || for d in /proc/[0-9]*; do "
    "printf '%s %s\\n' \"${d#/proc/}\" \"$(tr '\\0' ' ' < \"$d/cmdline\" 2>/dev/null)\"; done"
)

# neuron-monitor prints one JSON document per line, forever: read the first line
# through a FIFO, then stop the monitor instead of waiting for it to end. When no
# line comes, pass on the monitor's exit status and the end of its stderr.
_ONE_MONITOR_DOC = (
    'd=$(mktemp -d) && mkfifo "$d/p" && { neuron-monitor > "$d/p" 2> "$d/e" & m=$!; '
    'IFS= read -r line < "$d/p"; s=0; if [ -n "$line" ]; then kill "$m" 2>/dev/null; '
    'else wait "$m"; s=$?; tail -n 3 "$d/e" >&2; fi; rm -rf "$d"; '
    'printf "%s\\n" "$line"; exit "$s"; }'
)


# Every Trainium2 device (chip) holds eight physical NeuronCore-v3
# (logical-neuroncore-config.rst); logical core c at LNC l covers physical cores
# c*l .. c*l+l-1, so chip k's logical ids at LNC l are k*8/l .. (k+1)*8/l - 1.
PHYSICAL_CORES_PER_CHIP = 8
VISIBLE_CORES_ENV = "NEURON_RT_VISIBLE_CORES"
LNC_ENV = "NEURON_LOGICAL_NC_CONFIG"


class BindingError(ValueError):
    """A core binding that cannot be read or renumbered; the message says why."""


@dataclass(frozen=True)
class CoreBinding:
    """One logical NeuronCore, named in the numbering of the LNC it runs with."""

    core: int  # the logical id, as NEURON_RT_VISIBLE_CORES takes it
    lnc: int  # physical cores per logical core in this numbering

    @property
    def physical(self) -> tuple[int, ...]:
        return tuple(range(self.core * self.lnc, (self.core + 1) * self.lnc))

    @property
    def chip(self) -> int:
        return self.physical[0] // PHYSICAL_CORES_PER_CHIP

    def env(self) -> dict[str, str]:
        return {VISIBLE_CORES_ENV: str(self.core), LNC_ENV: str(self.lnc)}

    def renumbered(self, lnc: int) -> CoreBinding:
        """The logical core at ``lnc`` that starts at this one's first physical core."""
        if lnc < 1 or PHYSICAL_CORES_PER_CHIP % lnc:
            raise BindingError(f"LNC {lnc} is not 1, 2, 4 or 8 physical cores per logical core")
        first = self.physical[0]
        if first % lnc:
            raise BindingError(
                f"logical core {self.core} at LNC {self.lnc} starts at physical core {first}, "
                f"which no logical core at LNC {lnc} starts at"
            )
        return CoreBinding(first // lnc, lnc)

    def describe(self) -> dict[str, object]:
        """What a measurement's record says about where it ran."""
        return {
            "chip": self.chip,
            "visible_cores": str(self.core),
            "lnc": self.lnc,
            "physical_cores": list(self.physical),
        }


def read_binding(env: Mapping[str, str], default_lnc: int | None = None) -> CoreBinding:
    """The binding in ``env``: the first core of NEURON_RT_VISIBLE_CORES (an id, a
    range "4-7" or a list "4,5"), numbered at NEURON_LOGICAL_NC_CONFIG, else at
    ``default_lnc``. Raises BindingError when either is missing or unreadable."""
    cores = str(env.get(VISIBLE_CORES_ENV, "")).strip()
    first = cores.split(",")[0].split("-")[0].strip()
    if not first.isdigit():
        raise BindingError(f"{VISIBLE_CORES_ENV}={cores!r} names no NeuronCore")
    raw = env.get(LNC_ENV)
    if raw is None and default_lnc is None:
        raise BindingError(
            f"{VISIBLE_CORES_ENV}={cores} does not say its LNC numbering ({LNC_ENV} unset)"
        )
    text = str(raw if raw is not None else default_lnc).strip()
    if not text.isdigit() or int(text) < 1:
        raise BindingError(f"{LNC_ENV}={text!r} is not a positive integer")
    return CoreBinding(int(first), int(text))


def for_lnc(env: Mapping[str, str], lnc: int) -> dict[str, str]:
    """``env`` with its core renumbered for a kernel that runs at ``lnc``: the same
    chip, its first logical core in that numbering. A binding without its LNC is
    taken as already numbered at ``lnc``."""
    binding = read_binding(env, default_lnc=lnc).renumbered(lnc)
    return {**env, **binding.env()}


class NeuronGate:
    kind = "neuron"

    def __init__(
        self,
        *,
        search_path: Sequence[str] = (NEURON_BIN,),
        ignore_pids: frozenset[int] = frozenset(),
        busy_utilization: float = 5.0,
        use_monitor: bool = True,
        timeout: float = 30.0,
        process_table: str = PROCESS_TABLE,
    ) -> None:
        """``process_table`` is the shell line that prints the host's processes as
        "PID ARGS" lines, where leftover compilers are looked for."""
        self.process_table = process_table
        self.search_path = tuple(search_path)
        self.ignore_pids = ignore_pids
        self.busy_utilization = busy_utilization
        self.use_monitor = use_monitor
        self.timeout = timeout

    def survey(self, host: Host) -> list[DeviceStatus]:
        devices, command = self._list_devices(host)
        ignored = self.ignore_pids | (own_pids() if isinstance(host, LocalHost) else frozenset())
        usage = self._core_utilization(host, ignored) if self.use_monitor else None
        leftovers = self._leftover_compilers(host, ignored)
        return [
            self._status(host, device, index, command, ignored, usage, leftovers)
            for index, device in enumerate(devices)
        ]

    def _leftover_compilers(self, host: Host, ignored: frozenset[int]) -> tuple[ProcessInfo, ...]:
        """neuronx-cc / walrus processes in the host's process table. neuron-ls lists
        only processes that use a device, so a compiler left over from an earlier
        compile never shows there, yet the runtime fails (NRT_FAILURE) while one runs."""
        result = host.run(self.process_table, timeout=self.timeout)
        if result.timed_out or (result.returncode != 0 and not result.stdout.strip()):
            said = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise GateError(
                f"cannot read the process table of host {host.name} (ps, /proc): {said}; "
                "without it a leftover neuronx-cc cannot be ruled out"
            )
        found = []
        for line in result.stdout.splitlines():
            pid, _, command = line.strip().partition(" ")
            if pid.isdigit() and int(pid) not in ignored and _is_compiler(command.strip()):
                found.append(
                    ProcessInfo(int(pid), command.strip(), "leftover compiler (process table)")
                )
        # A compile kernelopt runs on this host right now is not a leftover.
        ours = in_flight(host, [p.pid for p in found], self.timeout)
        return tuple(p for p in found if p.pid not in ours)

    def _list_devices(self, host: Host) -> tuple[list[dict[str, Any]], str]:
        result = run_tool(host, NEW_ARGS, search_path=self.search_path, timeout=self.timeout)
        argv = NEW_ARGS
        if result.returncode != 0:
            # Older neuron-ls (before Neuron 2.34) only knows --json-output.
            argv = OLD_ARGS
            result = run_tool(host, OLD_ARGS, search_path=self.search_path, timeout=self.timeout)
            if result.returncode != 0:
                raise tool_failure(host, OLD_ARGS, result)
        command = shlex.join(argv)
        return parse_neuron_ls(result.stdout, command=command, host=host.name), command

    def _core_utilization(self, host: Host, ignored: frozenset[int]) -> MonitorReading | None:
        result = host.run(tool_line(_ONE_MONITOR_DOC, self.search_path), timeout=self.timeout)
        return read_monitor(result, host=host.name, timeout=self.timeout, ignore_pids=ignored)

    def _status(
        self,
        host: Host,
        device: dict[str, Any],
        index: int,
        command: str,
        ignored: frozenset[int],
        usage: MonitorReading | None,
        leftovers: tuple[ProcessInfo, ...] = (),
    ) -> DeviceStatus:
        where = f"`{command}` on host {host.name}, device entry {index}"
        number = _require(device, "neuron_device", int, where)
        cores = _require(device, "neuroncore_ids", list, where)
        if not cores or not all(isinstance(c, int) for c in cores):
            raise GateError(f"{where}: neuroncore_ids must be a non-empty list of integers")
        lnc = device.get("logical_neuroncore_config", 1)
        if not isinstance(lnc, int) or lnc < 1:
            raise GateError(f"{where}: logical_neuroncore_config must be a positive integer")
        processes = tuple(
            ProcessInfo(
                pid, name, "leftover compiler" if _is_compiler(name) else f"runtime {version}"
            )
            for pid, name, version in _processes(device, where)
            if pid not in ignored
            and (_is_compiler(name) or (version != "NA" and not _is_tool(name)))
        )
        listed = {p.pid for p in processes}
        processes += tuple(p for p in leftovers if p.pid not in listed)
        measured = usage.device(cores) if usage is not None else None
        utilization = None if isinstance(measured, str) else measured
        # The chip's first logical core, in the host's numbering (neuron-ls's ids).
        binding = CoreBinding(cores[0], lnc).env()
        reason = "idle"
        if processes:
            names = ", ".join(f"{p.command} (pid {p.pid})" for p in processes)
            reason = f"neuron processes attached: {names}"
            if any(_is_compiler(p.command) for p in processes):
                reason += (
                    " (a leftover compiler process (neuronx-cc or walrus) makes the runtime "
                    "fail with NRT_FAILURE while it runs)"
                )
        elif isinstance(measured, str):
            reason = f"utilization unknown: {measured}"  # unknown is busy
        elif utilization is not None and utilization > self.busy_utilization:
            reason = f"utilization {utilization:.0f}% > {self.busy_utilization:g}%"
        return DeviceStatus(
            host=host.name,
            device=str(number),
            idle=reason == "idle",
            utilization=utilization,
            memory_used=None,
            processes=processes,
            binding=binding,
            reason=reason,
            kind=self.kind,
        )


def _program(command: str) -> str:
    words = command.split()
    return words[0].rsplit("/", 1)[-1] if words else ""


def _is_tool(command: str) -> bool:
    return _program(command) in _TOOL_COMMANDS


def _is_compiler(command: str) -> bool:
    """neuronx-cc or walrus, also when run as `python .../neuronx-cc ...`."""
    words = [w.rsplit("/", 1)[-1] for w in command.split()[:2]]
    return any(w in _COMPILER_COMMANDS for w in words)


def parse_neuron_ls(text: str, *, command: str, host: str) -> list[dict[str, Any]]:
    """The device list, at top level (older format) or under a key (newer format)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        first = text.strip().splitlines()[0][:80] if text.strip() else "(empty output)"
        raise GateError(
            f"`{command}` on host {host} did not print JSON ({error.msg} at line {error.lineno}); "
            f"output starts with: {first}"
        ) from None
    if isinstance(data, list):
        devices = data
    elif isinstance(data, dict):
        devices = _find_device_list(data)
        if devices is None:
            raise GateError(
                f"`{command}` on host {host}: no device list in the JSON object "
                f"(keys: {', '.join(sorted(data)) or 'none'}); expected a list of objects "
                "with a 'neuron_device' key"
            )
    else:
        raise GateError(f"`{command}` on host {host}: expected a JSON list or object")
    for index, entry in enumerate(devices):
        if not isinstance(entry, dict):
            raise GateError(f"`{command}` on host {host}: device entry {index} is not an object")
    return devices


def _find_device_list(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The newer format's wrapper key is not documented, so look for the value
    that is a list of device objects; an empty list counts under a known key."""
    known = ("neuron_devices", "devices")
    for key in [*[k for k in known if k in data], *[k for k in data if k not in known]]:
        value = data[key]
        if not isinstance(value, list):
            continue
        if not value and key in known:
            return value
        if value and all(isinstance(v, dict) and "neuron_device" in v for v in value):
            return value
    return None


def _processes(device: dict[str, Any], where: str) -> list[tuple[int, str, str]]:
    raw = device.get("neuron_processes") or []
    if not isinstance(raw, list):
        raise GateError(f"{where}: neuron_processes must be a list")
    found = []
    for entry in raw:
        if not isinstance(entry, dict) or not isinstance(entry.get("pid"), int):
            raise GateError(f"{where}: each neuron_processes entry needs an integer 'pid'")
        version = str(entry.get("neuron_runtime_version", ""))
        found.append((entry["pid"], str(entry.get("command", "")), version))
    return found


def _require(entry: dict[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in entry:
        raise GateError(f"{where}: missing key '{key}'")
    value = entry[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise GateError(f"{where}: '{key}' should be {kind.__name__}, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class MonitorReading:
    """What one neuron-monitor run says about each core.

    `cores` maps a core to its utilization (0-100) or to why its value cannot be
    used; `unknown` says why nothing could be read at all. A device whose
    utilization is unknown counts as busy.
    """

    host: str
    cores: Mapping[int, float | str] = field(default_factory=dict)
    unknown: str = ""

    def device(self, cores: Sequence[int]) -> float | str:
        """The busiest core's utilization, or why the device's is unknown. A core
        no runtime reports is idle: neuron-monitor lists only the cores in use."""
        if self.unknown:
            return self.unknown
        values = {core: self.cores.get(core, 0.0) for core in cores}
        bad = [f"core {core} {why}" for core, why in values.items() if isinstance(why, str)]
        if bad:
            return f"neuron-monitor on host {self.host}: {'; '.join(bad)}"
        return max((float(value) for value in values.values()), default=0.0)


def read_monitor(
    result: CommandResult, *, host: str, timeout: float, ignore_pids: frozenset[int] = frozenset()
) -> MonitorReading | None:
    """The reading from one run of _ONE_MONITOR_DOC; None when neuron-monitor is
    not installed (neuron-ls's process lists alone decide then)."""
    where = f"neuron-monitor on host {host}"
    if result.timed_out:
        return MonitorReading(host, unknown=f"{where} printed no document within {timeout:g}s")
    line = result.stdout.strip()
    if not line:
        if result.returncode == 127:
            return None
        said = result.stderr.strip().splitlines()
        tail = f": {said[-1]}" if said else ""
        if result.returncode != 0:
            return MonitorReading(
                host, unknown=f"{where} failed with exit code {result.returncode}{tail}"
            )
        return MonitorReading(host, unknown=f"{where} printed no document{tail}")
    try:
        return MonitorReading(host, parse_neuron_monitor(line, host=host, ignore_pids=ignore_pids))
    except GateError as error:
        return MonitorReading(host, unknown=str(error))


def parse_neuron_monitor(
    line: str, *, host: str, ignore_pids: frozenset[int] = frozenset()
) -> dict[int, float | str]:
    """Per-core utilization (0-100) from one neuron-monitor document, the busiest
    runtime winning when several share a core; our own runtimes are skipped. A
    core whose value is missing, not finite or outside 0-100 maps to why."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as error:
        raise GateError(
            f"neuron-monitor on host {host} did not print a JSON document ({error.msg})"
        ) from None
    runtimes = doc.get("neuron_runtime_data") if isinstance(doc, dict) else None
    if not isinstance(runtimes, list):
        raise GateError(f"neuron-monitor on host {host}: missing list 'neuron_runtime_data'")
    usage: dict[int, float | str] = {}
    for runtime in runtimes:
        if not isinstance(runtime, dict) or runtime.get("pid") in ignore_pids:
            continue
        where = f"neuron-monitor on host {host}, runtime {runtime.get('pid')}"
        report = _object(runtime, "report", where)
        counters = _object(report, "neuroncore_counters", where)
        for core, values in _object(counters, "neuroncores_in_use", where).items():
            try:
                number = int(core)
            except ValueError:
                raise GateError(
                    f"neuron-monitor on host {host}: core {core!r} is not a core number"
                ) from None
            value = _percent(values)
            known = usage.get(number, 0.0)
            if isinstance(value, str) or isinstance(known, str):
                usage[number] = known if isinstance(known, str) else value
            else:
                usage[number] = max(known, value)
    return usage


def _object(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    """parent[key] as an object; absent or null is empty, anything else malformed."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise GateError(f"{where}: '{key}' is not an object")
    return value


def _percent(values: Any) -> float | str:
    """A core's neuroncore_utilization, or why it is not a usable percentage."""
    if not isinstance(values, dict) or "neuroncore_utilization" not in values:
        return "has no neuroncore_utilization"
    raw = values["neuroncore_utilization"]
    try:
        value = float(raw) if isinstance(raw, (int, float, str)) else math.nan
    except ValueError:
        value = math.nan
    if isinstance(raw, bool) or not math.isfinite(value) or not 0 <= value <= 100:
        return f"reports neuroncore_utilization {raw!r}, not a percentage in 0-100"
    return value
