"""Which Neuron SDK path a host offers: probed once, then used for every candidate.

One measuring path per SDK generation (docs/trn2.md, "SDK generations"):

- ``nrtpy`` (SDK >= 2.32): compile with the NKI compiler driver (``nki.compiler``),
  run, check and time with ``nrtpy`` in an environment of its own (the nki and nrtpy
  wheels cannot share one), profile with ``neuron-explorer``.
- ``capture`` (SDK 2.22-2.31, no nrtpy): compile with ``nki.compiler`` (2.30, 2.31)
  or ``neuronxcc.nki_standalone`` (before), then time with the profiler's
  ``capture`` of the NEFF fed the seeded inputs, several times, from its
  ``total_time``.

The probe looks for each piece in the environment that needs it and reads each
entry point's parameters (the call shapes); the plan takes ``nrtpy`` where the
run environment has it, else ``capture`` where a profiler is on PATH, unless the
program forces one (``device.neuron.sdk_path``). Every measurement's record says
which path, generation and call shapes were used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kernelopt.neuron.facts import PROFILERS

COMPILE_APIS = (
    ("nki.compiler", "nki.compiler.driver"),
    ("nki_standalone", "neuronxcc.nki_standalone"),
)
PATHS = ("nrtpy", "capture")


@dataclass(frozen=True)
class SdkPlan:
    compile_api: str | None
    compile_api_version: str | None
    runtime: str | None
    runtime_version: str | None
    profiler: str | None
    profiler_version: str | None
    compiler_version: str | None
    baseline: str | None  # "nkipy" when the compiler baseline can be built
    environments: str  # "one" or "split" (compile and run in different environments)
    problems: tuple[str, ...] = ()
    path: str | None = None  # "nrtpy" or "capture"; None: no way to time on this host
    path_chosen: str = "probed"  # "probed" or "forced (device.neuron.sdk_path)"
    generation: str | None = None  # the SDK range the probe's findings fit
    shapes: dict[str, Any] = field(default_factory=dict)  # entry point -> parameters found

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = list(self.problems)
        return data

    def compile_problem(self) -> str | None:
        if self.compile_api:
            return None
        return "no NKI compiler in the compile environment (device.neuron.activate): " + "; ".join(
            p for p in self.problems if p.startswith(("nki.compiler", "neuronxcc"))
        )

    def runtime_problem(self) -> str | None:
        """Why nothing can be run and timed on this host, or None."""
        if self.path == "capture":
            return None if self.profiler else "; ".join(self.problems)
        if self.runtime:
            return None
        found = [p for p in self.problems if p.startswith(("nrtpy", "no profiler", "sdk_path"))]
        hint = (
            " (nrtpy and the nki wheel cannot share one environment: set "
            "device.neuron.runtime_activate to an nrtpy environment)"
            if self.environments == "one"
            else ""
        )
        return "no nrtpy runtime in the run environment" + hint + ": " + "; ".join(found)


def _module(probe: dict[str, Any], name: str) -> dict[str, Any]:
    return dict((probe.get("modules") or {}).get(name) or {})


def generation(compile_probe: dict[str, Any], has_nrtpy: bool, profiler: str | None) -> str | None:
    """The SDK range the probe's findings fit (release notes: nrtpy from 2.32, the
    neuronxcc.nki namespace gone from 2.30, neuron-explorer from 2.27)."""
    if has_nrtpy:
        return ">=2.32"
    if _module(compile_probe, "nki.compiler.driver").get("ok") and not _module(
        compile_probe, "neuronxcc.nki"
    ).get("ok"):
        return "2.30-2.31"
    if _module(compile_probe, "neuronxcc.nki").get("ok") or _module(
        compile_probe, "neuronxcc.nki_standalone"
    ).get("ok"):
        return "2.27-2.29" if profiler == "neuron-explorer" else "2.22-2.26"
    return None


def _current_driver(compile_probe: dict[str, Any]) -> bool:
    """Whether the probed nki driver has the current shape (five parameters, no
    input_output_aliases)."""
    shapes = _module(compile_probe, "nki.compiler.driver").get("shapes") or {}
    to_neff = shapes.get("compile_bir_to_neff") or []
    return bool(to_neff) and "input_output_aliases" not in to_neff


def plan(
    compile_probe: dict[str, Any],
    runtime_probe: dict[str, Any],
    *,
    split: bool,
    forced: str = "auto",
) -> SdkPlan:
    """The path to use, from the probes of the compile and the run environments."""
    problems: list[str] = []
    api = api_version = None
    for name, module in COMPILE_APIS:
        found = _module(compile_probe, module)
        if found.get("ok"):
            api, api_version = name, found.get("version")
            break
        problems.append(f"{module}: {found.get('error', 'not probed')}")
    runtime = _module(runtime_probe, "nrtpy")
    if not runtime.get("ok"):
        problems.append(f"nrtpy: {runtime.get('error', 'not probed')}")
    tools = runtime_probe.get("tools") or {}
    profiler = next((t for t in PROFILERS if (tools.get(t) or {}).get("path")), None)
    if profiler is None:
        problems.append(f"no profiler on PATH ({', '.join(PROFILERS)})")
    compiler = (compile_probe.get("tools") or {}).get("neuronx-cc") or {}
    has_nrtpy = bool(runtime.get("ok"))
    # nrtpy installed but failing to import (e.g. beside the nki wheel) is a broken
    # environment to report, not an SDK without nrtpy to time another way.
    nrtpy_absent = not has_nrtpy and "No module named 'nrtpy'" in str(runtime.get("error", ""))
    if forced in PATHS:
        path, chosen = forced, "forced (device.neuron.sdk_path)"
        if forced == "nrtpy" and not has_nrtpy:
            problems.append("sdk_path nrtpy: the run environment has no nrtpy")
    else:
        path = "nrtpy" if has_nrtpy else "capture" if profiler and nrtpy_absent else None
        chosen = "probed"
        if path == "capture" and generation(compile_probe, False, profiler) == "2.30-2.31":
            if _current_driver(compile_probe):
                problems.append(
                    "sdk_path: this nki has the current (>= 2.32) compiler driver but the run "
                    "environment has no nrtpy, so times come from profiler captures; set "
                    "device.neuron.runtime_activate to an nrtpy environment for the device-side "
                    "benchmark"
                )
    shapes: dict[str, Any] = {}
    for probe in (compile_probe, runtime_probe):
        for module, found in (probe.get("modules") or {}).items():
            for entry, params in (found.get("shapes") or {}).items():
                if params is not None:
                    shapes[f"{module}.{entry}"] = params
    baseline = None
    if _module(compile_probe, "nkipy.core.compile").get("ok"):
        baseline = "nkipy"
    elif _module(compile_probe, "nkipy.runtime.execute").get("ok"):
        baseline = "nkipy"
    return SdkPlan(
        compile_api=api,
        compile_api_version=api_version,
        runtime="nrtpy" if has_nrtpy and path == "nrtpy" else None,
        runtime_version=runtime.get("version"),
        profiler=profiler,
        profiler_version=(tools.get(profiler) or {}).get("version") if profiler else None,
        compiler_version=compiler.get("version"),
        baseline=baseline,
        environments="split" if split else "one",
        problems=tuple(problems),
        path=path,
        path_chosen=chosen,
        generation=generation(compile_probe, has_nrtpy, profiler),
        shapes=shapes,
    )
