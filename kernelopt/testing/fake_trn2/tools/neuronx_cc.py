"""Fake neuronx-cc: `compile IR --target trn2 --lnc N --output X.neff [options]`.

The "IR" is the JSON the fake NKI standalone layer writes (kernel file,
function, input specs). Capacity and ISA problems come from kernelopt's
simulator and are reported the way the real compiler words them ("Out of
memory in psum"); the NEFF carries the simulator's profile for the fake
runtime and profiler.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import config, neff

LOG_NAME = "log-neuron-cc.txt"
ERROR_CODES = {"capacity": "NCC_EOOM001", "isa": "NCC_INKI016", "exception": "NCC_INKI001"}


def _option(argv: list[str], name: str, default: str | None = None) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return default


def _opt_level(argv: list[str]) -> int:
    levels = [a[2:] for a in argv if a.startswith("-O") and a[2:].isdigit()]
    return int(levels[-1]) if levels else 2


def simulate(ir: dict[str, Any]) -> dict[str, Any]:
    """The simulator's profile of the kernel, or SimError for a bad kernel."""
    import numpy as np

    from kernelopt.sim import run_kernel
    from kernelopt.workload import numpy_dtype

    inputs = {
        name: np.zeros(tuple(shape), dtype=numpy_dtype(dtype))
        for name, (shape, dtype) in ir["inputs"].items()
    }
    run = run_kernel(ir["kernel"], inputs, func=ir.get("func"), compute=False)
    return dict(run.profile)


def _say(text: str, *, error: bool = False) -> None:
    """Print like the compiler and append to log-neuron-cc.txt in the working
    directory, where the real one keeps its log."""
    print(text, file=sys.stderr if error else sys.stdout)
    with open(LOG_NAME, "a") as log:
        log.write(text + "\n")


def compile_main(argv: list[str], settings: dict[str, Any]) -> int:
    if not argv or argv[0].startswith("-"):
        print("neuronx-cc compile: expected the input file first", file=sys.stderr)
        return 2
    source, options = argv[0], argv[1:]
    output = _option(options, "--output")
    target = _option(options, "--target")
    if output is None or target is None:
        print("neuronx-cc compile: --output and --target are required", file=sys.stderr)
        return 2
    if target != "trn2":
        print(f"neuronx-cc: [NCC_EARG002] unsupported target {target!r}", file=sys.stderr)
        return 1
    _say(f"neuronx-cc {settings['compiler_version']}: compiling {source} for {target}")
    time.sleep(float(settings["compile_delay_s"]))
    if settings["compile_error"]:
        _say(f"ERROR [neuronx-cc]: {settings['compile_error']}", error=True)
        return 1
    ir = json.loads(Path(source).read_text())
    from kernelopt.sim import SimError

    try:
        profile = simulate(ir)
    except SimError as error:
        code = ERROR_CODES.get(error.kind, "NCC_INKI001")
        _say(f"ERROR [neuronx-cc]: [{code}] {error}", error=True)
        return 1
    neff.write(
        Path(output),
        neff.NEFF_FORMAT,
        {
            "kernel": ir["kernel"],
            "func": ir.get("func"),
            "inputs": ir["inputs"],
            "options": options,
            "lnc": int(_option(options, "--lnc", "1") or 1),
            "opt": _opt_level(options),
            "compiler_version": settings["compiler_version"],
            "profile": profile,
        },
    )
    _say("Compiler status PASS")
    return 0


def main(argv: list[str]) -> int:
    settings = config.load()
    config.record_call("neuronx-cc", argv)
    if argv[:1] == ["--version"]:
        print(f"NeuronX Compiler version {settings['compiler_version']}")
        return 0
    if argv[:1] != ["compile"]:
        print("neuronx-cc: the fake knows `compile` and `--version` only", file=sys.stderr)
        return 2
    return compile_main(argv[1:], settings)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
