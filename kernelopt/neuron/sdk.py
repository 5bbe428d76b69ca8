"""Which Neuron SDK path a host offers: probed once, then used for every candidate.

One measuring path per SDK generation (docs/trn2.md, "SDK generations"):

- ``nrtpy`` (SDK >= 2.32): compile with the NKI compiler driver (``nki.compiler``),
  run, check and time with ``nrtpy`` in an environment of its own (the nki and nrtpy
  wheels cannot share one), profile with ``neuron-explorer``.
- ``capture`` (SDK 2.22-2.31, no nrtpy): compile with ``nki.compiler`` (2.30, 2.31)
  or ``neuronxcc.nki_standalone`` (before), then time with the profiler's
  ``capture`` of the NEFF fed the seeded inputs, several times, from its
  ``total_time``.
- ``baremetal`` (SDK 2.22-2.27, kernels in the NKI beta-1 namespace
  ``neuronxcc.nki``): ``neuronxcc.nki.baremetal`` compiles and runs the kernel on
  the leased core (the device's outputs are checked), ``neuronxcc.nki.benchmark``
  collects neuron-bench's latency percentiles, and the saved NEFF is timed by the
  profiler's captures as on the ``capture`` path.

The probe looks for each piece in the environment that needs it and reads each
entry point's parameters (the call shapes); the plan takes ``nrtpy`` where the
run environment has it, else ``baremetal`` where the host has no ``nki`` namespace
(or no other compile entry) but has ``neuronxcc.nki.baremetal``, else ``capture``
where a profiler is on PATH, unless the program forces one
(``device.neuron.sdk_path``). A kernel written in beta 1 takes the ``baremetal``
path on any host that has it (``route``). Every measurement's record says which
path, generation and call shapes were used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kernelopt.neuron.facts import PROFILERS

COMPILE_APIS = (
    ("nki.compiler", "nki.compiler.driver"),
    ("nki_standalone", "neuronxcc.nki_standalone"),
)
PATHS = ("nrtpy", "capture", "baremetal")
# The kernel namespaces: the current one and NKI beta 1 (gone from Neuron 2.28).
NKI, BETA1 = "nki", "neuronxcc"
BETA1_MODULE = "neuronxcc.nki"
NAMESPACE_MODULES = {NKI: "nki", BETA1: BETA1_MODULE}
BAREMETAL_ENTRIES = ("baremetal", "benchmark")
# The compiler baseline's tracer: nkipy, or its predecessor neuronpy (awslabs/nki-autotune
# history), each by the module kernelopt calls.
BASELINES = (
    ("nkipy", ("nkipy.core.compile", "nkipy.runtime.execute")),
    ("neuronpy", ("neuronpy.core.compile",)),
)


@dataclass(frozen=True)
class SdkPlan:
    compile_api: str | None
    compile_api_version: str | None
    runtime: str | None
    runtime_version: str | None
    profiler: str | None
    profiler_version: str | None
    compiler_version: str | None
    baseline: str | None  # "nkipy" or "neuronpy": what builds the compiler baseline
    environments: str  # "one" or "split" (compile and run in different environments)
    problems: tuple[str, ...] = ()
    path: str | None = None  # "nrtpy", "capture", "baremetal"; None: no way to time here
    path_chosen: str = "probed"  # "probed" or "forced (device.neuron.sdk_path)"
    generation: str | None = None  # the SDK range the probe's findings fit
    shapes: dict[str, Any] = field(default_factory=dict)  # entry point -> parameters found
    namespaces: tuple[str, ...] = ()  # the kernel namespaces the compile environment has
    baremetal: bool = False  # neuronxcc.nki.baremetal and .benchmark were found

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = list(self.problems)
        data["namespaces"] = list(self.namespaces)
        return data

    def route(self, namespace: str) -> tuple[str | None, str | None]:
        """(path, compile API) for a kernel in ``namespace``: a beta-1 kernel goes through
        neuronxcc.nki.baremetal wherever the host has it; any other takes the plan's."""
        if namespace == BETA1 or self.path == "baremetal":
            return ("baremetal", "neuronxcc.nki.baremetal") if self.baremetal else (None, None)
        return self.path, self.compile_api or None

    def compile_problem(self) -> str | None:
        if self.compile_api or self.baremetal:
            return None
        return "no NKI compiler in the compile environment (device.neuron.activate): " + "; ".join(
            p for p in self.problems if p.startswith(("nki.compiler", "neuronxcc"))
        )

    def runtime_problem(self) -> str | None:
        """Why nothing can be run and timed on this host, or None."""
        if self.path == "baremetal" and not self.baremetal:
            return "; ".join(p for p in self.problems if p.startswith("sdk_path baremetal"))
        if self.path in ("capture", "baremetal"):
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


def generation(
    compile_probe: dict[str, Any],
    has_nrtpy: bool,
    profiler: str | None,
    runtime_error: str | None = None,
) -> str | None:
    """The SDK range the probe's findings fit, by the release notes: nrtpy from 2.32; the
    nki namespace from 2.27 and its compiler driver from 2.30; neuronxcc.nki (beta 1)
    up to 2.27. An nki driver in the current (>= 2.32) shape without a working nrtpy is
    still >= 2.32, said with what the run environment lacks (``runtime_error``: the
    nrtpy import's error). ``profiler`` is kept for callers; the namespaces decide."""
    if has_nrtpy:
        return ">=2.32"
    new = _module(compile_probe, "nki").get("ok") or _module(
        compile_probe, "nki.compiler.driver"
    ).get("ok")
    beta1 = _module(compile_probe, "neuronxcc.nki").get("ok")
    if _module(compile_probe, "nki.compiler.driver").get("ok") and not beta1:
        if _current_driver(compile_probe):
            error = str(runtime_error or "")
            if not error or "No module named 'nrtpy'" in error:
                return ">=2.32 (no nrtpy environment configured)"
            return f">=2.32 (nrtpy does not import: {error.splitlines()[0][:120]})"
        return "2.30-2.31"
    if new:
        return "2.27-2.29"
    if beta1 or _module(compile_probe, "neuronxcc.nki_standalone").get("ok"):
        return "2.22-2.26"
    return None


def _current_driver(compile_probe: dict[str, Any]) -> bool:
    """Whether the probed nki driver has the current shape (five parameters, no
    input_output_aliases)."""
    shapes = _module(compile_probe, "nki.compiler.driver").get("shapes") or {}
    to_neff = shapes.get("compile_bir_to_neff") or []
    return bool(to_neff) and "input_output_aliases" not in to_neff


def _has_baremetal(probe: dict[str, Any]) -> bool:
    """neuronxcc.nki with both baremetal and benchmark (NKI beta 1's device entry points)."""
    found = _module(probe, BETA1_MODULE)
    shapes = found.get("shapes") or {}
    return bool(found.get("ok")) and all(shapes.get(n) is not None for n in BAREMETAL_ENTRIES)


def _auto_path(
    compile_probe: dict[str, Any], has_nrtpy: bool, baremetal: bool, capture: bool, api: str | None
) -> str | None:
    """nrtpy where the run environment has it; baremetal where kernels can only be beta 1
    (no nki namespace) or nothing else compiles (without a profiler to time its NEFF,
    the plan says so: ``runtime_problem``); else the profiler's captures."""
    if has_nrtpy:
        return "nrtpy"
    no_namespace = not _module(compile_probe, "nki").get("ok")
    if baremetal and (no_namespace or api is None):
        return "baremetal"
    return "capture" if capture else None


def _baseline(compile_probe: dict[str, Any]) -> str | None:
    for name, modules in BASELINES:
        if any(_module(compile_probe, m).get("ok") for m in modules):
            return name
    return None


def _shapes(*probes: dict[str, Any]) -> dict[str, Any]:
    shapes: dict[str, Any] = {}
    for probe in probes:
        for module, found in (probe.get("modules") or {}).items():
            for entry, params in (found.get("shapes") or {}).items():
                if params is not None:
                    shapes[f"{module}.{entry}"] = params
    return shapes


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
    baremetal = _has_baremetal(runtime_probe)
    # nrtpy installed but failing to import (e.g. beside the nki wheel) is a broken
    # environment to report, not an SDK without nrtpy to time another way.
    nrtpy_absent = not has_nrtpy and "No module named 'nrtpy'" in str(runtime.get("error", ""))
    if forced in PATHS:
        path, chosen = forced, "forced (device.neuron.sdk_path)"
        if forced == "nrtpy" and not has_nrtpy:
            problems.append("sdk_path nrtpy: the run environment has no nrtpy")
        if forced == "baremetal" and not baremetal:
            problems.append(
                "sdk_path baremetal: the run environment has no neuronxcc.nki.baremetal and "
                "neuronxcc.nki.benchmark (NKI beta 1, Neuron 2.27 and before)"
            )
    else:
        capture = bool(profiler) and nrtpy_absent
        path, chosen = _auto_path(compile_probe, has_nrtpy, baremetal, capture, api), "probed"
        if path == "capture" and _module(compile_probe, "nki.compiler.driver").get("ok"):
            if _current_driver(compile_probe):
                problems.append(
                    "sdk_path: this nki has the current (>= 2.32) compiler driver but the run "
                    "environment has no nrtpy, so times come from profiler captures; set "
                    "device.neuron.runtime_activate to an nrtpy environment for the device-side "
                    "benchmark"
                )
    return SdkPlan(
        compile_api=api,
        compile_api_version=api_version,
        runtime="nrtpy" if has_nrtpy and path == "nrtpy" else None,
        runtime_version=runtime.get("version"),
        profiler=profiler,
        profiler_version=(tools.get(profiler) or {}).get("version") if profiler else None,
        compiler_version=compiler.get("version"),
        baseline=_baseline(compile_probe),
        environments="split" if split else "one",
        problems=tuple(problems),
        path=path,
        path_chosen=chosen,
        generation=generation(
            compile_probe, has_nrtpy, profiler, None if has_nrtpy else runtime.get("error")
        ),
        shapes=_shapes(compile_probe, runtime_probe),
        namespaces=tuple(
            n for n, m in NAMESPACE_MODULES.items() if _module(compile_probe, m).get("ok")
        ),
        baremetal=baremetal,
    )
