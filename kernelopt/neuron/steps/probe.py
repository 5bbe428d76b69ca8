"""`probe`: which SDK pieces this environment has, and the parameters of each entry
point kernelopt may call (the call shapes)."""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import subprocess
import sys
from typing import Any

from kernelopt.neuron.steps.common import emit, package_version, parameters

# What a compile, a run and the baseline need, by the module that provides it.
MODULES = {
    "nki": "nki",
    "nki.compiler.driver": "nki",
    "neuronxcc.nki_standalone": "neuronxcc",
    "neuronxcc.nki": "neuronxcc",
    "nrtpy": "nrtpy",
    "nkipy.core.compile": "nkipy",
    "nkipy.runtime.execute": "nkipy",
    # nkipy's predecessor, the baseline's tracer on older SDKs (awslabs/nki-autotune history).
    "neuronpy.core.compile": "neuronpy",
}


# Environment variables the probe reports (the nrtpy environment needs the first).
PROBED_ENV = ("LD_LIBRARY_PATH", "NEURON_RT_VISIBLE_CORES", "NEURON_LOGICAL_NC_CONFIG")


def _attribute(module: str, dotted: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


# The call shapes kernelopt adapts to: each entry point's parameters, as found.
SHAPES = {
    "nki.compiler.driver": ("compile_to_bir", "compile_bir_to_neff", "CompileOptions"),
    "neuronxcc.nki_standalone": ("compile_nki_ir_kernel_to_neff",),
    "neuronxcc.nki": ("baremetal", "benchmark"),
    "nrtpy": ("NrtpyModel.load_from_neff", "NrtpyModel.benchmark"),
    "nkipy.core.compile": ("compile_to_neff",),
    "nkipy.runtime.execute": ("_compile_kernel",),
    "neuronpy.core.compile": ("trace", "compile_to_neff"),
}


def call_shapes(module: str) -> dict[str, list[str] | None]:
    """The parameters of each entry point of ``module`` kernelopt may call (absent: None)."""
    shapes: dict[str, list[str] | None] = {}
    for name in SHAPES.get(module, ()):
        try:
            shapes[name] = parameters(_attribute(module, name))
        except Exception:  # noqa: BLE001 - absent in this release
            shapes[name] = None
    return shapes


def probe_step(args: argparse.Namespace) -> None:
    modules: dict[str, dict[str, Any]] = {}
    for module, package in MODULES.items():
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - an SDK module may fail in any way
            modules[module] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        else:
            modules[module] = {
                "ok": True,
                "version": package_version(package),
                "shapes": call_shapes(module),
            }
    tools = {}
    for tool in args.tools.split(",") if args.tools else ():
        path = shutil.which(tool)
        version = None
        if path:
            try:
                done = subprocess.run(
                    [path, "--version"], capture_output=True, text=True, timeout=60
                )
                lines = done.stdout.strip().splitlines()
                version = lines[-1].split()[-1] if done.returncode == 0 and lines else None
            except (OSError, subprocess.TimeoutExpired):
                version = None
        tools[tool] = {"path": path, "version": version}
    env = {name: os.environ.get(name) for name in PROBED_ENV}
    emit({"python": sys.executable, "modules": modules, "tools": tools, "env": env})
