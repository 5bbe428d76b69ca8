"""The current compile entry point, the NKI compiler driver (``nki.compiler``), in
whichever of its two call shapes this nki has (probed by signature, never assumed)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.neuron.facts import ARTIFACTS_DIR, NEFF_NAME, PLATFORM
from kernelopt.neuron.steps.common import (
    StepError,
    compile_error,
    parameters,
    sdk_missing,
    tensor_json,
    write_tensors,
)

# The current driver names an input aliased to an output with this suffix.
MUST_ALIAS_SUFFIX = ".must_alias_input"


@dataclass(frozen=True)
class Traced:
    """What compile_to_bir returned, read the same way whatever its call shape."""

    shape: str
    bir: Any
    argument_names: list[str]
    output_arg_names: list[str]
    aliases: Any
    in_specs: list[dict[str, Any]]
    out_specs: list[dict[str, Any]]
    source: str


def compile_current(
    function: Any, inputs: dict[str, np.ndarray], names: list[str], out: Path, args: Any
) -> dict[str, Any]:
    """The NKI compiler driver, in the call shape this nki has (probed by signature):

    - "specs" (the current driver): compile_to_bir returns one result whose
      ``input_specs`` / ``output_specs`` name the tensors; compile_bir_to_neff takes
      five positionals and raises on failure.
    - "tuple" (the driver before it): compile_to_bir returns (bir, trace result) with
      ``argument_names`` / ``output_names``; compile_bir_to_neff also takes
      ``input_output_aliases`` and reports failure in ``neuronx_cc_error``.
    """
    if args.compiler_arg:
        raise StepError(
            f"compiler_args {args.compiler_arg} are neuronx-cc command-line options, which the "
            "NKI compiler API (nki.compiler) of this SDK does not take; put compiler pipeline "
            "options in device.neuron.pipeline_options instead"
        )
    try:
        from nki.compiler.driver import CompileOptions, compile_bir_to_neff, compile_to_bir
    except ImportError as exc:
        raise sdk_missing("the NKI compiler API (nki.compiler)", exc) from None
    to_bir = parameters(compile_to_bir) or []
    to_neff = parameters(compile_bir_to_neff) or []
    kernel, frontend, wrapper = _driver_kernel(function, to_bir)
    neff = out / NEFF_NAME
    artifacts = _empty_artifacts(out)
    options = CompileOptions(
        target=PLATFORM, lnc=args.lnc, output_path=str(neff), artifacts_dir=str(artifacts)
    )
    if args.pipeline_option:
        options = options.set_pipeline_options(*args.pipeline_option)
    keywords: dict[str, Any] = {"inputs": inputs, "compile_opts": options}
    if frontend is not None:
        keywords["frontend"] = frontend
    if "output_names" in to_bir:
        keywords["output_names"] = names
    try:
        result = compile_to_bir(kernel, **keywords)
    except Exception as exc:  # noqa: BLE001 - the compiler's own error types
        raise compile_error(exc) from None
    traced = _traced(result, inputs, to_bir)
    aliased, out_specs, source = _bir_to_neff(
        compile_bir_to_neff, to_neff, options, traced, inputs, neff
    )
    write_tensors(out, traced.in_specs, out_specs, source)
    return {
        "target": PLATFORM,
        "lnc": args.lnc,
        "output_path": str(neff),
        "artifacts_dir": str(artifacts),
        "pipeline_options": list(args.pipeline_option),
        "call_shape": {
            "result": traced.shape,
            "compile_to_bir": to_bir,
            "compile_bir_to_neff": to_neff,
            "kernel": wrapper or "the @nki.jit object",
            "input_output_aliases": aliased,
        },
    }


def _driver_kernel(function: Any, to_bir: list[str]) -> tuple[Any, Any, str | None]:
    """(the kernel as this driver takes it, its tracer frontend if it takes one, the
    wrapper's name if the kernel was wrapped)."""
    frontend = wrapper = None
    if "frontend" in to_bir:
        try:
            from nki.compiler.frontend import TracerFrontend

            frontend = TracerFrontend()
        except ImportError as exc:
            raise sdk_missing("nki.compiler.frontend.TracerFrontend", exc) from None
    kernel = function
    try:
        from nki.framework.kernel import Kernel

        kernel, wrapper = Kernel(function), "nki.framework.kernel.Kernel"
    except ImportError:
        pass
    return kernel, frontend, wrapper


def _empty_artifacts(out: Path) -> Path:
    """neuronx-cc wants an empty artifacts folder: one of its own, never the working
    directory."""
    artifacts = out / ARTIFACTS_DIR
    if artifacts.exists():
        shutil.rmtree(artifacts)
    artifacts.mkdir(parents=True)
    return artifacts


def _traced(result: Any, inputs: dict[str, np.ndarray], to_bir: list[str]) -> Traced:
    """compile_to_bir's result in the "specs" shape or the "tuple" shape."""
    if hasattr(result, "input_specs") and hasattr(result, "output_specs"):
        in_specs = [tensor_json(s) for s in result.input_specs]
        out_specs = [tensor_json(s) for s in result.output_specs]
        return Traced(
            shape="specs",
            bir=result,
            argument_names=[s["name"] for s in in_specs],
            output_arg_names=[s["name"] for s in out_specs],
            aliases=None,
            in_specs=in_specs,
            out_specs=out_specs,
            source="compile_to_bir result output_specs",
        )
    if isinstance(result, tuple) and len(result) == 2:
        bir, traced = result
        argument_names = list(traced.argument_names)
        return Traced(
            shape="tuple",
            bir=bir,
            argument_names=argument_names,
            output_arg_names=list(traced.output_names),
            aliases=getattr(traced, "input_output_aliases", None),
            in_specs=[
                {"name": n, "shape": list(np.shape(inputs[n])), "dtype": str(inputs[n].dtype)}
                for n in argument_names
                if n in inputs
            ],
            out_specs=[],
            source="none: this driver's trace result names no output dtype",
        )
    raise StepError(
        f"nki.compiler.driver.compile_to_bir returned a {type(result).__name__} with neither "
        "input_specs/output_specs nor a (bir, trace result) pair: a call shape kernelopt "
        f"does not know (compile_to_bir{tuple(to_bir)})"
    )


def _bir_to_neff(
    compile_bir_to_neff: Any,
    to_neff: list[str],
    options: Any,
    traced: Traced,
    inputs: dict[str, np.ndarray],
    neff: Path,
) -> tuple[bool, list[dict[str, Any]], str]:
    """The NEFF from the traced kernel: (whether input_output_aliases was passed, the
    output specs, where they came from)."""
    arrays = [inputs[n.removesuffix(MUST_ALIAS_SUFFIX)] for n in traced.argument_names]
    positional = (options, traced.bir, arrays, traced.argument_names, traced.output_arg_names)
    extra = {}
    if "input_output_aliases" in to_neff and traced.aliases is not None:
        extra["input_output_aliases"] = traced.aliases
    try:
        compiled = compile_bir_to_neff(*positional, **extra)
    except Exception as exc:  # noqa: BLE001 - NCCError and whatever else the compiler raises
        raise compile_error(exc) from None
    error = getattr(compiled, "neuronx_cc_error", None)
    if error:
        raise StepError(str(error).strip())
    out_specs, source = traced.out_specs, traced.source
    if not out_specs and hasattr(compiled, "output_specs"):
        out_specs = [tensor_json(s) for s in compiled.output_specs]
        source = "compile_bir_to_neff result output_specs"
    if not neff.is_file():
        built = getattr(compiled, "neff_path", None)
        if built and Path(built).is_file():
            shutil.copyfile(built, neff)
    return "input_output_aliases" in extra, out_specs, source
