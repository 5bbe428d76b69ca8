"""Fake neuron-ls: JSON in the older (-j, a bare list) or newer (--output-format
json, the list wrapped with instance fields) shape, per the config."""

from __future__ import annotations

import json
import sys
from typing import Any

from kernelopt.testing.fake_trn2 import config


def devices(settings: dict[str, Any]) -> list[dict[str, Any]]:
    per = int(settings["cores_per_device"])
    lnc = int(settings["lnc"])
    busy = {str(k): v for k, v in settings["busy"].items()}
    found = []
    for number in range(int(settings["devices"])):
        processes = []
        if str(number) in busy:
            processes.append(
                {
                    "pid": int(busy[str(number)]),
                    "command": "python3 train.py",
                    "neuron_runtime_version": settings["runtime_version"],
                }
            )
        found.append(
            {
                "neuron_device": number,
                "bdf": f"{0xCC + number:02x}:00.0",
                "cpu_affinity": "0-47,96-143",
                "numa_node": "0",
                "connected_to": [n for n in range(int(settings["devices"])) if n != number][:2],
                "nc_count": per // lnc,
                "logical_neuroncore_config": lnc,
                "memory_size": 103079215104,
                "neuroncore_ids": list(range(number * per, (number + 1) * per)),
                "neuron_processes": processes,
            }
        )
    return found


def main(argv: list[str]) -> int:
    settings = config.load()
    config.record_call("neuron-ls", argv)
    new = settings["neuron_ls_format"] == "new"
    if "--output-format" in argv:
        value = argv[argv.index("--output-format") + 1 :][:1]
        if not new:
            print("neuron-ls: error: unrecognized arguments: --output-format", file=sys.stderr)
            return 2
        if value != ["json"]:
            print("neuron-ls: the fake prints json only", file=sys.stderr)
            return 2
        doc: Any = {
            "instance_type": settings["instance_type"],
            "instance_id": "i-0fa4e0000000000",
            "logical_neuroncore_config": settings["lnc"],
            "neuron_devices": devices(settings),
        }
    elif {"-j", "--json-output"} & set(argv):
        doc = devices(settings)
    else:
        print("neuron-ls: the fake prints json only (-j or --output-format json)", file=sys.stderr)
        return 2
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
