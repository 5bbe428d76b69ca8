"""Which Neuron SDK path a host offers: probed once, then used for every candidate.

The current SDK compiles with the NKI compiler API (``nki.compiler``), runs and
times with ``nrtpy`` (in an environment of its own: the nki and nrtpy wheels
cannot share one) and profiles with ``neuron-explorer``; older SDKs compile
with ``neuronxcc.nki_standalone`` and profile with ``neuron-profile``. The
probe looks for each piece in the environment that needs it; the plan takes
the current one where present, else the older one, and the record of every
measurement says which was used.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kernelopt.neuron.facts import PROFILERS

COMPILE_APIS = (
    ("nki.compiler", "nki.compiler.driver"),
    ("nki_standalone", "neuronxcc.nki_standalone"),
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
    baseline: str | None  # "nkipy" when the compiler baseline can be built
    environments: str  # "one" or "split" (compile and run in different environments)
    problems: tuple[str, ...] = ()

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
        if self.runtime:
            return None
        found = [p for p in self.problems if p.startswith("nrtpy")]
        hint = (
            " (nrtpy and the nki wheel cannot share one environment: set "
            "device.neuron.runtime_activate to an nrtpy environment)"
            if self.environments == "one"
            else ""
        )
        return "no nrtpy runtime in the run environment" + hint + ": " + "; ".join(found)


def _module(probe: dict[str, Any], name: str) -> dict[str, Any]:
    return dict((probe.get("modules") or {}).get(name) or {})


def plan(compile_probe: dict[str, Any], runtime_probe: dict[str, Any], *, split: bool) -> SdkPlan:
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
    return SdkPlan(
        compile_api=api,
        compile_api_version=api_version,
        runtime="nrtpy" if runtime.get("ok") else None,
        runtime_version=runtime.get("version"),
        profiler=profiler,
        profiler_version=(tools.get(profiler) or {}).get("version") if profiler else None,
        compiler_version=compiler.get("version"),
        baseline="nkipy" if _module(compile_probe, "nkipy.runtime.execute").get("ok") else None,
        environments="split" if split else "one",
        problems=tuple(problems),
    )
