"""`inputs`: the seeded inputs as raw-bytes files for a profiler capture (SDKs without
nrtpy, and the profile of one execution on the nrtpy path).

The format follows the one public runner that feeds capture its inputs
(awslabs/nki-autotune ``nkigym/src/nkigym/profile/_runner.py``, ``_input_arguments``):
``NAME FILE`` pairs, each FILE the array's bytes as ``ndarray.tofile`` writes them (C
order, no header). The Neuron docs name no input format for capture: unverified there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from kernelopt.neuron.facts import INPUTS_DIR, TENSORS_NAME
from kernelopt.neuron.steps.common import emit, load
from kernelopt.workload import make_inputs


def inputs_step(args: argparse.Namespace) -> None:
    """The seeded inputs as NAME.bin files (raw bytes), named as the NEFF names them (its
    compiler's tensor description), else by the workload's parameters."""
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, args.seed)
    out = Path(args.out)
    folder = out / INPUTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    names = list(inputs)
    described = out / TENSORS_NAME
    if described.is_file():
        found = [t["name"] for t in json.loads(described.read_text()).get("inputs") or []]
        if len(found) == len(names):
            names = found
    pairs = []
    for index, (name, value) in enumerate(zip(names, inputs.values(), strict=True)):
        path = folder / f"input_{index:03d}.bin"
        np.ascontiguousarray(value).tofile(path)
        pairs.append([name, str(path)])
    emit({"inputs": pairs, "seed": args.seed, "format": "raw bytes (ndarray.tofile)"})
