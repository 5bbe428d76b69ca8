"""`compile-reference`: the compiler baseline, f_numpy traced by nkipy (or, on older
SDKs, its predecessor neuronpy) and compiled by neuronx-cc, in a fresh folder of its
own."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import NEFF_NAME
from kernelopt.neuron.steps.common import (
    StepError,
    emit,
    load,
    parameters,
    tensor_json,
    write_tensors,
)
from kernelopt.workload import make_inputs

# nkipy's own flags for a traced numpy kernel (nkipy core/compile.py), used when the
# installed nkipy does not name them itself.
NKIPY_FLAGS = "--lnc 1 --internal-tensorizer-opt-level=2"


LNC_FLAGS = ("--lnc", "--logical-nc-config")


def _lnc_of(flags: str) -> int | None:
    words = shlex.split(flags)
    for i, word in enumerate(words):
        if word in LNC_FLAGS and i + 1 < len(words):
            return int(words[i + 1])
        if word.startswith(tuple(f"{f}=" for f in LNC_FLAGS)):
            return int(word.split("=", 1)[1])
    return None


def with_lnc(flags: str, lnc: int) -> str:
    """``flags`` with every LNC value in them set to ``lnc`` (``--lnc N``, ``--lnc=N`` and
    the ``--logical-nc-config`` spellings), or ``--lnc N`` appended when they have none:
    one LNC on the command line, whichever duplicate neuronx-cc would honour."""
    words = shlex.split(flags)
    out: list[str] = []
    found = False
    i = 0
    while i < len(words):
        word = words[i]
        if word in LNC_FLAGS and i + 1 < len(words):
            out += [word, str(lnc)]
            found, i = True, i + 2
            continue
        name, sep, _ = word.partition("=")
        if sep and name in LNC_FLAGS:
            out.append(f"{name}={lnc}")
            found = True
        else:
            out.append(word)
        i += 1
    if not found:
        out += ["--lnc", str(lnc)]
    return shlex.join(out)


def compile_reference_step(args: argparse.Namespace) -> None:
    """f_numpy traced by nkipy and compiled by neuronx-cc into out/NEFF_NAME.

    nkipy removes its build folder before compiling and returns to the working
    directory afterwards, so it builds in a fresh folder of its own (never the
    step's working directory). Its own flags (``--lnc 1
    --internal-tensorizer-opt-level=2``) are passed with their LNC set to the program's
    (``with_lnc``): one ``--lnc`` on the command line, never a second one appended.
    """
    workload = load(Path(args.workload))
    inputs = make_inputs(workload.input_specs, 0)
    tracer = _tracer()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f"kernelopt-{tracer}-", dir=out.parent))
    try:
        if tracer == "nkipy":
            from nkipy.core.trace import NKIPyKernel

            record = _compile_nkipy(NKIPyKernel, workload, inputs, build, out, args.lnc)
        else:
            record = _compile_neuronpy(workload, inputs, build, out, args.lnc)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    print(f"call shape: {json.dumps(record['call_shape'])}")
    emit({"api": tracer, "options": record})


def _tracer() -> str:
    """nkipy, else its predecessor neuronpy (awslabs/nki-autotune history)."""
    problems = []
    for name, module in (("nkipy", "nkipy.core.trace"), ("neuronpy", "neuronpy.core.compile")):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            problems.append(f"{module}: {exc}")
        else:
            return name
    raise StepError(f"neither nkipy nor neuronpy is importable here ({'; '.join(problems)})")


# neuronpy's flags for a traced numpy function (awslabs/nki-autotune
# autotune/core/compile.py: --model-type=transformer, and --lnc=1 on trn2).
NEURONPY_FLAGS = "--model-type=transformer"


def _compile_neuronpy(
    workload: Any, inputs: dict[str, np.ndarray], build: Path, out: Path, lnc: int
) -> dict[str, Any]:
    """f_numpy through neuronpy: ``trace(fn)``, ``.specialize(*inputs)``,
    ``compile_to_neff(trace_kernel=, output_dir=, target=CompilationTarget.TRN2,
    additional_compiler_args=, save_artifacts=True)`` -> the NEFF's path (awslabs/
    nki-autotune autotune/core/compile.py@1433f19; its defaults: unverified)."""
    import neuronpy.core.compile as compile_module

    flags = f"{NEURONPY_FLAGS} --lnc={lnc}"
    keywords: dict[str, Any] = {
        "output_dir": str(build / "artifacts"),
        "additional_compiler_args": flags,
        "save_artifacts": True,
    }
    target = getattr(compile_module, "CompilationTarget", None)
    if target is not None and hasattr(target, "TRN2"):
        keywords["target"] = target.TRN2
    names = parameters(compile_module.compile_to_neff) or []
    if "neff_name" in names:
        keywords["neff_name"] = NEFF_NAME
    try:
        traced = compile_module.trace(workload.f_numpy)
        traced.specialize(*inputs.values())
        built = compile_module.compile_to_neff(trace_kernel=traced, **keywords)
    except Exception as exc:  # noqa: BLE001 - neuronpy's and the compiler's own error types
        raise StepError(
            f"neuronpy could not compile f_numpy: {type(exc).__name__}: {exc}"
        ) from None
    shutil.copyfile(built, out / NEFF_NAME)
    code = getattr(traced, "_code", None)
    outputs = [tensor_json(t) for t in getattr(code, "outputs", None) or []]
    write_tensors(
        out,
        [tensor_json(t) for t in getattr(code, "inputs", None) or []],
        outputs,
        "neuronpy traced outputs" if outputs else "none: neuronpy's trace named no outputs",
    )
    return {
        "neuronpy_compiler_args": flags,
        "build_dir": "a fresh folder beside the step's own (removed afterwards)",
        "lnc": lnc,
        "call_shape": {"compile_to_neff": names, "trace": parameters(compile_module.trace)},
    }


@contextlib.contextmanager
def _nkipy_flags(flags: str, *modules: Any) -> Iterator[None]:
    """nkipy's own flags set to ``flags`` in the modules that hold them, for one call."""
    found = [m for m in (*modules, sys.modules.get("nkipy.core.compile")) if m is not None]
    held = {id(m): (m, m.nkipy_compiler_args) for m in found if hasattr(m, "nkipy_compiler_args")}
    try:
        for module, _ in held.values():
            module.nkipy_compiler_args = flags
        yield
    finally:
        for module, value in held.values():
            module.nkipy_compiler_args = value


def _compile_nkipy(
    kernel_class: Any,
    workload: Any,
    inputs: dict[str, np.ndarray],
    build: Path,
    out: Path,
    lnc: int,
) -> dict[str, Any]:
    compile_module = execute = None
    try:
        import nkipy.core.compile as compile_module
    except ImportError:
        try:
            import nkipy.runtime.execute as execute
        except ImportError as exc:
            raise StepError(f"nkipy has neither core.compile nor runtime.execute ({exc})") from None
    own = str(getattr(compile_module or execute, "nkipy_compiler_args", "") or NKIPY_FLAGS)
    flags = with_lnc(own, lnc)
    artifacts = build / "artifacts"
    try:
        traced = kernel_class.trace(workload.f_numpy)
        if compile_module is not None and hasattr(compile_module, "compile_to_neff"):
            traced.specialize(*inputs.values())
            target = getattr(compile_module, "CompilationTarget", None)
            keywords: dict[str, Any] = {
                "output_dir": str(artifacts),
                "neff_name": NEFF_NAME,
                "additional_compiler_args": flags,
                "save_artifacts": True,
            }
            if target is not None and hasattr(target, "TRN2"):
                keywords["target"] = target.TRN2
            built = compile_module.compile_to_neff(traced, **keywords)
            shape = {"compile_to_neff": parameters(compile_module.compile_to_neff)}
            code = getattr(traced, "_code", None)
        else:
            execute = execute or importlib.import_module("nkipy.runtime.execute")
            function = getattr(execute, "_compile_kernel", None)
            if function is None:
                raise StepError(
                    "nkipy offers neither core.compile.compile_to_neff nor "
                    "runtime.execute._compile_kernel: a layout kernelopt does not know"
                )
            # This entry point removes artifacts_dir and prepends nkipy's own flags itself,
            # read from its module (runtime/execute.py@66974b2 reads compile.
            # nkipy_compiler_args at call time: unverified for _compile_kernel): those are
            # set to the program's LNC for the call, so no second --lnc is appended.
            with _nkipy_flags(flags, compile_module, execute):
                result = function(
                    traced,
                    *inputs.values(),
                    artifacts_dir=str(artifacts),
                    additional_compiler_args="",
                )
            built = result[0] if isinstance(result, tuple | list) else result
            shape = {"_compile_kernel": parameters(function)}
            code = getattr(traced, "_code", None)
    except StepError:
        raise
    except Exception as exc:  # noqa: BLE001 - nkipy's and the compiler's own error types
        raise StepError(f"nkipy could not compile f_numpy: {type(exc).__name__}: {exc}") from None
    shutil.copyfile(built, out / NEFF_NAME)
    outputs = [tensor_json(t) for t in getattr(code, "outputs", None) or []]
    write_tensors(
        out,
        [tensor_json(t) for t in getattr(code, "inputs", None) or []],
        outputs,
        "nkipy traced IR outputs" if outputs else "none: nkipy's trace named no outputs",
    )
    return {
        "nkipy_compiler_args": own,
        "additional_compiler_args": flags,
        "build_dir": "a fresh folder beside the step's own (removed afterwards)",
        "lnc": lnc,
        "call_shape": shape,
    }
