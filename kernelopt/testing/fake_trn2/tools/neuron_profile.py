"""Fake neuron-profile: `capture -n X.neff -s X.ntff` runs the NEFF and writes an
NTFF; `view -n X.neff -s X.ntff --output-format summary-json` prints the
summary as the real tool does: one top-level key holding the flat dict,
percent fields as fractions, unavailable fields as -1."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import config, neff

# Simulator fields the real summary does not have.
_NOT_IN_SUMMARY = ("device", "precision", "mac_count", "instruction_count")


def _option(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg in names and i + 1 < len(argv):
            return argv[i + 1]
        for name in names:
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def summary(data: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data["profile"].items():
        if key in _NOT_IN_SUMMARY:
            continue
        flat[key] = value / 100.0 if key.endswith("_percent") else value
    for key in settings["unavailable"]:
        flat[key] = -1
    flat["instance_type"] = settings["instance_type"]
    flat["compiler_version"] = data["compiler_version"]
    flat["runtime_version"] = settings["runtime_version"]
    return flat


def main(argv: list[str]) -> int:
    settings = config.load()
    config.record_call("neuron-profile", argv)
    command = argv[:1]
    neff_path = _option(argv, "-n", "--neff")
    ntff_path = _option(argv, "-s", "--session-file")
    if command not in (["capture"], ["view"]) or neff_path is None or ntff_path is None:
        print("neuron-profile: usage: capture|view -n NEFF -s NTFF", file=sys.stderr)
        return 2
    try:
        data = neff.read(neff_path, neff.NEFF_FORMAT)
    except neff.FakeFileError as error:
        print(f"neuron-profile: {error}", file=sys.stderr)
        return 1
    if command == ["capture"]:
        if not os.environ.get("NEURON_RT_VISIBLE_CORES"):
            print("neuron-profile: no NeuronCore visible to this process", file=sys.stderr)
            return 1
        neff.write(Path(ntff_path), neff.NTFF_FORMAT, {"neff": neff_path})
        print(f"profile written to {ntff_path}")
        return 0
    if _option(argv, "--output-format") != "summary-json":
        print(
            "neuron-profile view: the fake prints --output-format summary-json only",
            file=sys.stderr,
        )
        return 2
    try:
        neff.read(ntff_path, neff.NTFF_FORMAT)
    except neff.FakeFileError as error:
        print(f"neuron-profile: {error}", file=sys.stderr)
        return 1
    print(json.dumps({Path(neff_path).stem: summary(data, settings)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
