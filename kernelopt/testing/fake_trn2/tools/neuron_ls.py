"""Fake neuron-ls, written from the public record, interface by interface.

* ``-j`` / ``--json-output``: a top-level JSON list, one object per device with
  ``neuron_device``, ``bdf``, ``cpu_affinity``, ``numa_node``, ``connected_to``,
  ``nc_count``, ``logical_neuroncore_config``, ``memory_size``,
  ``neuroncore_ids``, ``neuron_processes`` ({pid, command,
  neuron_runtime_version}). Source: aws-neuron/aws-neuron-sdk
  tools/neuron-sys-tools/neuron-ls.rst, the ``neuron-ls -j`` example of a
  trn2.48xlarge (``nc_count`` 4, ``logical_neuroncore_config`` 2, device 0 ->
  ids [0, 1, 2, 3], device 15 -> [60, 61, 62, 63]) and its field definitions
  ("NEURON CORE IDS / neuroncore_ids ... used with NEURON_RT_VISIBLE_CORES").
* Core ids are *logical* ids in the host's LNC numbering and ``nc_count``
  counts logical cores: eight physical NeuronCore-v3 per Trainium2 device
  (about-neuron/arch/neuron-features/logical-neuroncore-config.rst), so LNC=2
  shows four per device and LNC=1 eight. Ids of device k are contiguous from
  k * nc_count, as in the example (unverified for hosts whose devices are not
  all visible, e.g. containers).
* ``--output-format json`` (Neuron 2.34 release notes): unverified shape; the
  fake wraps the list with instance fields under a configurable key, and an
  older tool refuses the flag with argparse's usual error (unverified text).
* An idle device: ``neuron_processes`` empty, or absent (unverified: both).
* The tool lists only processes that use a device (neuron-ls.rst: "processes
  running on each device"); a compiler never appears unless a test says so.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kernelopt.testing.fake_trn2 import config

OLD_FLAGS = ("-j", "--json-output")
NEW_FLAG = "--output-format"


def _process(entry: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "pid": int(entry["pid"]),
        "command": entry.get("command", "python3 train.py"),
        "neuron_runtime_version": entry.get("version", settings["runtime_version"]),
    }


def _specs(settings: dict[str, Any]) -> list[dict[str, Any]]:
    """Explicit device specs, or ones made from the count and the busy map."""
    if isinstance(settings["devices"], list):
        return settings["devices"]
    physical, lnc = int(settings["cores_per_device"]), int(settings["lnc"])
    per = physical // lnc  # logical cores per device at the host's LNC
    busy = {str(k): v for k, v in settings["busy"].items()}
    return [
        {
            "id": number,
            "lnc": lnc,
            "cores": list(range(number * per, (number + 1) * per)),
            "processes": [{"pid": busy[str(number)]}] if str(number) in busy else [],
        }
        for number in range(int(settings["devices"]))
    ]


def devices(settings: dict[str, Any]) -> list[dict[str, Any]]:
    specs = _specs(settings)
    ids = [int(s["id"]) for s in specs]
    found = []
    for spec in specs:
        number, lnc, cores = int(spec["id"]), int(spec.get("lnc", 1)), list(spec["cores"])
        entry: dict[str, Any] = {
            "neuron_device": number,
            "bdf": f"{0xCC + number:02x}:00.0",
            "cpu_affinity": "0-47,96-143",
            "numa_node": "0",
            "connected_to": [n for n in ids if n != number][:4],
            "nc_count": len(cores),
            "logical_neuroncore_config": lnc,
            "memory_size": 103079215104,
            "neuroncore_ids": cores,
        }
        if not spec.get("omit_processes_key"):
            entry["neuron_processes"] = [_process(p, settings) for p in spec.get("processes", [])]
        if settings["neuron_ls_output"] == "missing-key":
            del entry["neuroncore_ids"]
        found.append(entry)
    return found


def main(argv: list[str]) -> int:
    settings = config.load()
    config.record_call("neuron-ls", argv)
    new = settings["neuron_ls_format"] == "new"
    if NEW_FLAG in argv:
        if not new:
            print(f"neuron-ls: error: unrecognized arguments: {NEW_FLAG} json", file=sys.stderr)
            return 2
        if argv[argv.index(NEW_FLAG) + 1 :][:1] != ["json"]:
            print("neuron-ls: the fake prints json only", file=sys.stderr)
            return 2
    elif not set(OLD_FLAGS) & set(argv):
        print("neuron-ls: the fake prints json only (-j or --output-format json)", file=sys.stderr)
        return 2
    if settings["neuron_ls_output"] == "malformed":
        print("instance-type: trn2.48xlarge\n+--------+ not json")
        return 0
    listed = devices(settings)
    doc: Any = listed
    if NEW_FLAG in argv:
        lncs = {d["logical_neuroncore_config"] for d in listed} or {int(settings["lnc"])}
        doc = {
            "instance_type": settings["instance_type"],
            "instance_id": "i-0fa4e0000000000",
            "logical_neuroncore_config": min(lncs),
            settings["neuron_ls_wrap_key"]: listed,
        }
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
