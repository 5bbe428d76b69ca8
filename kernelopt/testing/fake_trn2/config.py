"""The fake toolchain's settings: one JSON file in its home folder.

The executables find the home through KERNELOPT_FAKE_TRN2_HOME, which only
their own wrapper scripts set, so the settings travel with the wrappers
through SSH sessions that forward no environment.
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
CALLS_NAME = "calls.log"

DEFAULTS: dict[str, Any] = {
    # neuron-ls: "new" knows --output-format json (and -j), "old" only -j/--json-output.
    "neuron_ls_format": "new",
    "devices": 2,
    "cores_per_device": 8,
    "lnc": 1,
    # device number -> pid of a foreign process attached to it ("busy").
    "busy": {},
    "utilization": {},
    "monitor_period_s": 1.0,
    "instance_type": "trn2.48xlarge",
    "compiler_version": "2.21.0.0+fake",
    "runtime_version": "2.28.0.0+fake",
    "compile_delay_s": 0.0,
    # A message makes every compile fail with it (after the delay).
    "compile_error": "",
    "run_error": "",
    # Summary fields reported as -1 ("not available").
    "unavailable": ["spill_save_bytes", "spill_reload_bytes", "hfu_estimated_percent"],
    # Relative spread of the fake run latencies around the modelled time.
    "jitter": 0.02,
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


# Environment variables a call records, so tests can see how a tool was bound.
RECORDED_ENV = (
    "NEURON_RT_VISIBLE_CORES",
    "NEURON_PLATFORM_TARGET_OVERRIDE",
    "NEURON_LOGICAL_NC_CONFIG",
)


def record_call(tool: str, args: list[str]) -> None:
    """One line per invocation with its wall-clock start, for tests to read."""
    env = {name: os.environ[name] for name in RECORDED_ENV if name in os.environ}
    entry = {"tool": tool, "args": args, "t": time.time(), "env": env}
    with open(home() / CALLS_NAME, "a") as log:
        log.write(json.dumps(entry) + "\n")
