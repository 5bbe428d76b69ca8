"""Fake neuron-monitor: one JSON document per period on stdout, until killed."""

from __future__ import annotations

import json
import sys
import time

from kernelopt.testing.fake_trn2 import config


def document(settings: dict) -> dict:
    busy = {str(k): int(v) for k, v in settings["busy"].items()}
    per = int(settings["cores_per_device"])
    runtimes = []
    for device, pid in busy.items():
        cores = range(int(device) * per, (int(device) + 1) * per)
        runtimes.append(
            {
                "pid": pid,
                "neuron_runtime_tag": str(pid),
                "error": "",
                "report": {
                    "neuroncore_counters": {
                        "period": float(settings["monitor_period_s"]),
                        "neuroncores_in_use": {
                            str(c): {"neuroncore_utilization": 87.5} for c in cores
                        },
                        "error": "",
                    }
                },
            }
        )
    return {
        "neuron_runtime_data": runtimes,
        "system_data": None,
        "instance_info": {"instance_type": settings["instance_type"]},
        "neuron_hardware_info": {
            "neuron_device_type": "trainium2",
            "neuroncore_version": "v3",
            "neuron_device_count": int(settings["devices"]),
            "neuroncore_per_device_count": per // int(settings["lnc"]),
            "logical_neuroncore_config": int(settings["lnc"]),
            "error": "",
        },
    }


def main(argv: list[str]) -> int:
    settings = config.load()
    config.record_call("neuron-monitor", argv)
    period = max(0.05, float(settings["monitor_period_s"]))
    while True:
        print(json.dumps(document(settings)), flush=True)
        time.sleep(period)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (BrokenPipeError, KeyboardInterrupt):
        sys.exit(0)
