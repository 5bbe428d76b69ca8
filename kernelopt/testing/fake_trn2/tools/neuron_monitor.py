"""Fake neuron-monitor, written from the public record, interface by interface.

* Output: one complete JSON document per period on stdout until stopped (period
  from the configuration, default 5 s). Source: aws-neuron/aws-neuron-sdk
  tools/neuron-sys-tools/neuron-monitor-user-guide.rst.
* ``neuron_runtime_data[i]``: ``pid``, ``neuron_runtime_tag``, ``error`` and
  ``report.neuroncore_counters.neuroncores_in_use["<core>"].neuroncore_utilization``
  (a percentage, 0-100), one entry per runtime process; only cores in use are
  listed. Source: the same guide's "neuroncore_counters" section.
* The core keys: the guide does not say whether they are logical ids at the
  host's LNC or physical ids (unverified); the fake uses the logical ids that
  neuron-ls prints for the same device.
* ``instance_info`` and ``neuron_hardware_info`` (``neuron_device_type``,
  ``neuroncore_version``, ``neuron_device_count``,
  ``neuroncore_per_device_count``, ``logical_neuroncore_config``): the same
  guide; the per-device count at LNC=2 being the logical count is unverified.
* Failure modes (exit 1 with a message, no output, a hang, a line that is not
  JSON) are test inputs; their exact text is unverified.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from kernelopt.testing.fake_trn2 import config
from kernelopt.testing.fake_trn2.tools.neuron_ls import _specs


def _counters(value: Any) -> dict[str, Any]:
    """A core's counters; a test may give a string ("NaN") or None (no utilization)."""
    if value is None:
        return {}
    return {"neuroncore_utilization": value if isinstance(value, str) else float(value)}


def _runtime(pid: int, cores: dict[str, Any], period: float) -> dict[str, Any]:
    return {
        "pid": pid,
        "neuron_runtime_tag": str(pid),
        "error": "",
        "report": {
            "neuroncore_counters": {
                "period": period,
                "neuroncores_in_use": {core: _counters(value) for core, value in cores.items()},
                "error": "",
            }
        },
    }


def document(settings: dict[str, Any]) -> dict[str, Any]:
    period = float(settings["monitor_period_s"])
    runtimes = []
    # A busy device (the "busy" map) has a foreign runtime keeping its cores at work;
    # explicit device lists report only the utilization given for them.
    lnc = int(settings["lnc"])
    per = int(settings["cores_per_device"]) // lnc  # logical cores per device
    if not isinstance(settings["devices"], list):
        for device, pid in settings["busy"].items():
            cores = {str(c): 87.5 for c in range(int(device) * per, (int(device) + 1) * per)}
            runtimes.append(_runtime(int(pid), cores, period))
    if settings["utilization"]:
        cores = {str(c): v for c, v in settings["utilization"].items()}
        runtimes.append(_runtime(int(settings["monitor_runtime_pid"]), cores, period))
    return {
        "neuron_runtime_data": runtimes,
        "system_data": {},
        "instance_info": {"instance_type": settings["instance_type"], "error": ""},
        "neuron_hardware_info": {
            "neuron_device_type": "trainium2",
            "neuroncore_version": "v3" if lnc == 1 else "v3d",
            "neuron_device_count": len(_specs(settings)),
            "neuroncore_per_device_count": per,
            "logical_neuroncore_config": lnc,
            "error": "",
        },
    }


def main(argv: list[str]) -> int:
    settings = config.load()
    # Started processes are logged in monitor.pids (not the call log), so tests can
    # check that each one was stopped.
    if settings["monitor"] == "absent":
        print("neuron-monitor: not installed on this fake host", file=sys.stderr)
        return 127
    with open(config.home() / config.MONITOR_PIDS_NAME, "a") as pids:
        pids.write(f"{os.getpid()}\n")
    mode = settings["monitor"]
    if mode == "fail":
        print("neuron-monitor: error: cannot open device /dev/neuron0", file=sys.stderr)
        return 1
    if mode == "empty":
        return 0
    if mode in ("hang", "malformed"):
        if mode == "malformed":
            print('{"neuron_runtime_data": [', flush=True)
        time.sleep(3600)
        return 0
    while True:
        print(json.dumps(document(settings)), flush=True)
        time.sleep(max(0.05, float(settings["monitor_period_s"])))
        settings = config.load()  # the state may change while the monitor runs


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
