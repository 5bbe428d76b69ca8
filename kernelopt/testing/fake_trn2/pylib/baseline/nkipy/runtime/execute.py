"""Fake ``nkipy.runtime.execute._compile_kernel``: the traced numpy function,
specialised on the arguments, compiled by the fake ``neuronx-cc`` to a NEFF."""

from __future__ import annotations

import inspect
import shlex
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.testing.fake_trn2 import config, trace

NEFF_NAME = "baseline.neff"


def _compile_kernel(
    kernel: Any, *args: Any, artifacts_dir: str | None = None, additional_compiler_args: str = ""
) -> tuple[str, str, None, None, None]:
    config.record_call("nkipy", ["_compile_kernel", additional_compiler_args])
    fn = kernel.fn
    names = list(inspect.signature(fn).parameters)
    inputs = dict(zip(names, args, strict=True))
    result = fn(**{k: np.asarray(v).astype(np.float32) for k, v in inputs.items()})
    results = result if isinstance(result, tuple | list) else (result,)
    dtype = trace.output_dtype(inputs)
    source = inspect.getsourcefile(fn)
    if source is None:
        raise ValueError(f"cannot find the source of {fn!r}")
    ir = {
        "kind": "numpy",
        "kernel": str(Path(source).resolve()),
        "source": Path(source).read_text(),
        "func": fn.__name__,
        "inputs": {k: [list(np.shape(v)), str(np.asarray(v).dtype)] for k, v in inputs.items()},
        "outputs": [
            [list(np.shape(r)), str(dtype), "output" if len(results) == 1 else f"output{i}"]
            for i, r in enumerate(results)
        ],
        "api": "nkipy",
    }
    out = Path(artifacts_dir or ".")
    lnc, rest = 1, []
    words = iter(shlex.split(additional_compiler_args))
    for word in words:
        if word == "--lnc":
            lnc = int(next(words, "1"))
        elif word.startswith("--lnc="):
            lnc = int(word.split("=", 1)[1])
        else:
            rest.append(word)
    done = trace.run_compiler(ir, out, out / NEFF_NAME, lnc, rest)
    if done.returncode != 0:
        raise RuntimeError(f"neuronx-cc failed: {(done.stderr or done.stdout).strip()}")
    return str(out / NEFF_NAME), fn.__name__, None, None, None
