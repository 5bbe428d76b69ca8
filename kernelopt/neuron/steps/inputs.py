"""`inputs`: the seeded inputs as NAME.npy files for a profiler capture (SDKs
without nrtpy)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from kernelopt.neuron.facts import INPUTS_DIR, TENSORS_NAME
from kernelopt.neuron.steps.common import emit, load
from kernelopt.workload import make_inputs


def inputs_step(args: argparse.Namespace) -> None:
    """The seeded inputs as NAME.npy files for a profiler capture, named as the NEFF
    names them (its compiler's tensor description), else by the workload's parameters."""
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
    for name, value in zip(names, inputs.values(), strict=True):
        path = folder / f"{name}.npy"
        np.save(path, np.ascontiguousarray(value), allow_pickle=False)
        pairs.append([name, str(path)])
    emit({"inputs": pairs, "seed": args.seed})
