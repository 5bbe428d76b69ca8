"""The fake toolchain's settings: one JSON file in its home folder.

The executables find the home through KERNELOPT_FAKE_TRN2_HOME, which only
their own wrapper scripts (and the activate scripts) set, so the settings
travel with the wrappers through SSH sessions that forward no environment.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HOME_ENV = "KERNELOPT_FAKE_TRN2_HOME"
CONFIG_NAME = "config.json"
CALLS_NAME = "calls.jsonl"
MONITOR_PIDS_NAME = "monitor.pids"

# The SDK layouts the fake can stand for, each as it shipped (docs/trn2.md, "The fake
# toolchain"); "older" and "current" are the names earlier versions of the fake used.
SDK_STYLES = ("2.22", "2.26", "2.27", "2.30", "2.32")
SDK_ALIASES = {"older": "2.27", "current": "2.32"}


def canonical(sdk: str) -> str:
    """The layout a name stands for ("current" -> "2.32"); ValueError for an unknown one."""
    name = SDK_ALIASES.get(str(sdk), str(sdk))
    if name not in SDK_STYLES:
        known = ", ".join((*SDK_STYLES, *SDK_ALIASES))
        raise ValueError(f"sdk must be one of {known}, not {sdk!r}")
    return name


def tools_version(settings: dict[str, Any]) -> str:
    """What the fake tools print as their version."""
    return str(settings["tools_version"] or f"{canonical(str(settings['sdk']))}.0.0+fake")


def layout(sdk: str) -> tuple[int, int]:
    """A layout's SDK version as (major, minor), for "from 2.28 on" rules."""
    major, minor = canonical(sdk).split(".")
    return int(major), int(minor)


DEFAULTS: dict[str, Any] = {
    # 2.27 by default: one environment, so a program (or test) that sets only
    # device.neuron.activate describes it fully; 2.32 also needs runtime_activate.
    "sdk": "2.27",
    # neuron-ls: "new" knows --output-format json (and -j), "old" only -j/--json-output.
    "neuron_ls_format": "new",
    # "ok", or "malformed" (not JSON) / "missing-key" (no neuroncore_ids) to test parsers.
    "neuron_ls_output": "ok",
    # The newer format's key holding the device list (not documented, so tests vary it).
    "neuron_ls_wrap_key": "neuron_devices",
    # A device count, or explicit devices: [{id, cores, lnc, processes: [{pid, command,
    # version}], omit_processes_key}].
    "devices": 2,
    # Physical NeuronCores per device, and the host's LNC: Trn2 defaults to LNC=2,
    # four logical cores per device (neuron-ls.rst, logical-neuroncore-config.rst).
    "cores_per_device": 8,
    "lnc": 2,
    # device number -> pid of a foreign runtime attached to it ("busy").
    "busy": {},
    # core -> utilization percent, reported by one runtime with pid monitor_runtime_pid.
    # A string is printed as a JSON string (e.g. "NaN"); null leaves the core's
    # entry without neuroncore_utilization.
    "utilization": {},
    "monitor_runtime_pid": 4242,
    # "ok", or "absent": neuron-monitor is not installed. Failures: "fail" (exit 1,
    # cannot open the device), "empty" (exit 0, no output), "hang" (no output, never
    # exits), "malformed" (a line that is not JSON, then nothing).
    "monitor": "ok",
    "monitor_period_s": 1.0,
    "instance_type": "trn2.48xlarge",
    "compiler_version": "2.21.0.0+fake",
    "nki_version": "0.2.0+fake",
    "runtime_version": "2.28.0.0+fake",
    # The tools' --version; empty: the layout's release (aws-neuronx-tools follows the SDK's
    # release numbers: unverified).
    "tools_version": "",
    "compile_delay_s": 0.0,
    # Which value of a repeated compiler option neuronx-cc takes ("last" or "first"):
    # not on record, so tests run both readings.
    "repeated_option": "last",
    # A message makes every compile fail with it (after the delay).
    "compile_error": "",
    "run_error": "",
    # Wrong numbers from the device, for testing the device-side check:
    # {"index": [row, col, ...], "value": 3.0, "output": 0} overwrites one output element
    # ({"offset": 0.1} instead of "value" moves it from what the kernel computed).
    "device_fault": None,
    # The unit neuron-explorer prints *_percent fields in: "fraction" (its public outputs),
    # or "percent", standing for a release that changed it (none is on record).
    "explorer_percent_unit": "fraction",
    # Transient bind failures (NRT_FAILURE) of the runtime and the profiler's capture:
    # {"count": N} fails the next N binds, {"count": N, "neff_sha256": H} the next N binds
    # of that NEFF. Used failures are counted in HOME/bind-failures.used.
    "bind_failures": None,
    # Summary fields reported as -1 ("not available").
    "unavailable": ["spill_save_bytes", "spill_reload_bytes", "hfu_estimated_percent"],
    # Measurement noise of the fake device, as a standard deviation in MFU percentage points.
    "noise_pp": 0.05,
    # The runtime's device-side benchmark (NrtpyModel.benchmark) is missing, as in
    # nrtpy releases before it: timing then comes from the profiler's total_time.
    "no_device_benchmark": False,
}


def home() -> Path:
    value = os.environ.get(HOME_ENV)
    if not value:
        sys.exit(
            f"fake Trn2 tool: {HOME_ENV} is not set; run it through the wrappers that "
            "`kernelopt fake-trn2 env` installs"
        )
    return Path(value)


def load() -> dict[str, Any]:
    path = home() / CONFIG_NAME
    settings = dict(DEFAULTS)
    if path.is_file():
        try:
            settings.update(json.loads(path.read_text()))
        except json.JSONDecodeError as error:
            sys.exit(f"fake Trn2 tool: {path}: not JSON ({error.msg} at line {error.lineno})")
    return settings


def current() -> dict[str, Any]:
    """The settings where a fake package is imported: the home's, else the defaults
    (an activate script sets the home; a bare import for inspection may not)."""
    return load() if os.environ.get(HOME_ENV) else dict(DEFAULTS)


# Environment variables a call records, so tests can see how a tool was bound.
RECORDED_ENV = (
    "NEURON_RT_VISIBLE_CORES",
    "NEURON_PLATFORM_TARGET_OVERRIDE",
    "NEURON_LOGICAL_NC_CONFIG",
)


def record_call(tool: str, args: list[str], **details: Any) -> None:
    """One JSON line per invocation with its wall-clock start, for tests to read."""
    env = {name: os.environ[name] for name in RECORDED_ENV if name in os.environ}
    entry = {"tool": tool, "args": args, "t": time.time(), "env": env, **details}
    with open(home() / CALLS_NAME, "a") as log:
        log.write(json.dumps(entry) + "\n")
