"""Fake neuronx-cc: ``neuronx-cc compile [--framework F] INPUT --target trn2
--output X.neff [--lnc N] [-O2] [options]`` and ``neuronx-cc --version``. Like the
real compiler it keeps its log (log-neuron-cc.txt) in the working directory and
reports errors with an NCC code ("Out of memory in psum").

Sources: "How to generate a NEFF file" (compiler/neuronx-cc/how-to-generate-neff)
and the Neuron Compiler CLI reference (``compile``, ``--framework``, ``--target``,
``--output``, ``--lnc`` / ``--logical-nc-config``, ``-O``); aws-neuron/nkipy
``core/compile.py``@1d93cbb calls ``compile --framework XLA INPUT --target T
--output=NAME`` plus extra flags (options before the input). Which value of a repeated
option the compiler takes is unverified: the ``repeated_option`` setting says ("last",
argparse's rule, or "first"), so both readings can be tested. The log's name: unverified.

INPUT is the fake's own JSON stand-in for the traced kernel (NKI IR / BIR, or a
numpy function traced by nkipy). Capacity and ISA problems come from the fake
device's model (hardware.py); the NEFF carries that model's profile for the
fake runtime and profiler.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import config, hardware, neff

LOG_NAME = "log-neuron-cc.txt"
ERROR_CODES = {"capacity": "NCC_EOOM001", "isa": "NCC_INKI016", "exception": "NCC_INKI001"}


# Options that take a value as the next word (the CLI reference's compile options).
VALUED = ("--framework", "--target", "--output", "--lnc", "--logical-nc-config")


def _option(
    argv: list[str], *names: str, default: str | None = None, rule: str = "last"
) -> str | None:
    """The value given for any of ``names`` (``--name value`` or ``--name=value``): the
    last one given, or with ``rule`` "first" the first."""
    found: list[str] = []
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                found.append(argv[i + 1])
            elif arg.startswith(name + "="):
                found.append(arg.split("=", 1)[1])
    if not found:
        return default
    return found[0] if rule == "first" else found[-1]


def _input(argv: list[str]) -> tuple[str | None, list[str]]:
    """The input file (the first word that is neither an option nor an option's value)
    and the options around it."""
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in VALUED:
            skip = True
            continue
        if not arg.startswith("-"):
            return arg, argv[:i] + argv[i + 1 :]
    return None, argv


def _opt_level(argv: list[str]) -> int:
    levels = [a[2:] for a in argv if a.startswith("-O") and a[2:].isdigit()]
    return int(levels[-1]) if levels else 2


def _say(text: str, *, error: bool = False) -> None:
    """Print like the compiler and append to log-neuron-cc.txt in the working directory."""
    print(text, file=sys.stderr if error else sys.stdout, flush=True)
    with open(LOG_NAME, "a") as log:
        log.write(text + "\n")


def _inputs(ir: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from kernelopt.workload import numpy_dtype

    return {
        name: np.zeros(tuple(shape), dtype=numpy_dtype(dtype))
        for name, (shape, dtype) in ir["inputs"].items()
    }


def compile_main(argv: list[str], settings: dict[str, Any]) -> int:
    source, options = _input(argv)
    if source is None:
        print("neuronx-cc compile: no input file given", file=sys.stderr)
        return 2
    output = _option(options, "--output", default="file.neff")
    target = _option(options, "--target")
    if target is None:
        print("neuronx-cc compile: --target is required", file=sys.stderr)
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
    if ir["kind"] == "numpy":
        profile = hardware.baseline_profile(ir["inputs"], ir["outputs"])
    else:
        from kernelopt.sim import SimError

        try:
            profile = hardware.model_profile(Path(ir["kernel"]), ir.get("func"), _inputs(ir))
        except SimError as error:
            code = ERROR_CODES.get(error.kind, "NCC_INKI001")
            _say(f"ERROR [neuronx-cc]: [{code}] {error}", error=True)
            return 1
    assert output is not None
    neff.write(
        Path(output),
        neff.NEFF_FORMAT,
        {
            **{k: ir[k] for k in ("kind", "kernel", "source", "func", "inputs", "outputs", "api")},
            "pipeline_options": ir.get("pipeline_options", []),
            "options": options,
            "lnc": int(
                _option(
                    options,
                    "--lnc",
                    "--logical-nc-config",
                    default="1",
                    rule=settings["repeated_option"],
                )
                or 1
            ),
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
