"""`check-outputs`: the outputs a profiler capture saved (``--save-output``) compared
with f_numpy on the seeded inputs they were computed from: the device-side check of
SDKs without nrtpy.

Each saved file is the output's raw bytes in the dtype the NEFF writes (awslabs/
nki-autotune ``nkigym/src/nkigym/profile/_runner.py`` reads them so and checks their
size); the dtype and shape come from the compiler's tensor description beside the NEFF
(tensors.json), as on the nrtpy path.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from kernelopt.neuron.facts import TENSORS_NAME
from kernelopt.neuron.numerics import compare
from kernelopt.neuron.steps.common import StepError, emit, expected_outputs, load
from kernelopt.neuron.steps.run import FLOAT_OF_WIDTH, output_layout
from kernelopt.workload import make_inputs, numpy_dtype


def _saved(pairs: list[str]) -> list[tuple[str, Path]]:
    found = []
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise StepError(f"--saved takes NAME=FILE, got {pair!r}")
        found.append((name, Path(path)))
    return found


def _ordered(saved: list[tuple[str, Path]], names: list[str]) -> list[Path]:
    """The saved files in the NEFF's output order: by name where every output was saved
    under its name, else in the order the capture reported them."""
    by_name = dict(saved)
    if names and set(names) <= set(by_name):
        return [by_name[n] for n in names]
    return [path for _, path in saved]


def check_outputs_step(args: argparse.Namespace) -> None:
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, args.seed)
    want = expected_outputs(workload, inputs)
    neff = Path(args.neff)
    files = _ordered(_saved(args.saved), _names(neff))
    if len(files) != len(want):
        raise StepError(
            f"the capture saved {len(files)} output(s), f_numpy gives {len(want)}: {files}"
        )
    try:
        layout, source = output_layout(neff, want)
    except StepError:
        layout, source = _by_width(files, want)
    got = []
    for path, (shape, dtype) in zip(files, layout, strict=True):
        expected = int(np.prod(shape)) * dtype.itemsize
        size = path.stat().st_size if path.is_file() else -1
        if size != expected:
            raise StepError(
                f"saved output {path} has {size} bytes, expected {expected} "
                f"({shape} {dtype.name}, from {source})"
            )
        got.append(np.fromfile(path, dtype=dtype).reshape(shape))
    check = compare(got, list(want), atol=args.tolerance, rtol=args.tolerance)
    emit(
        {
            "check": {
                **check.to_json(),
                "seed": args.seed,
                "atol": args.tolerance,
                "rtol": args.tolerance,
                "message": check.describe(),
                "source": "the outputs the profiler's capture saved (--save-output)",
            },
            "output_dtypes": {"dtypes": [d.name for _, d in layout], "source": source},
        }
    )


def _by_width(
    files: list[Path], want: tuple[np.ndarray, ...]
) -> tuple[list[tuple[tuple[int, ...], np.dtype]], str]:
    """Without the compiler's tensor description: each output's shape from f_numpy and
    its float dtype from the saved file's bytes per element, as the nrtpy path reads a
    width from the runtime's tensor info."""
    layout = []
    for path, expected in zip(files, want, strict=True):
        count = max(int(np.prod(np.shape(expected))), 1)
        size = path.stat().st_size if path.is_file() else 0
        width = size // count
        if size % count or width not in FLOAT_OF_WIDTH:
            raise StepError(
                f"saved output {path} has {size} bytes for {count} elements: no float dtype "
                f"of that width ({sorted(FLOAT_OF_WIDTH)} bytes), and no {TENSORS_NAME}"
            )
        layout.append((tuple(np.shape(expected)), numpy_dtype(FLOAT_OF_WIDTH[width])))
    return layout, "the saved file's size (byte width; no tensors.json from the compile)"


def _names(neff: Path) -> list[str]:
    """The NEFF's output names as its compiler described them (tensors.json), if any."""
    described = neff.parent / TENSORS_NAME
    if not described.is_file():
        return []
    return [str(t.get("name")) for t in json.loads(described.read_text()).get("outputs") or []]
