"""`kernelopt doctor`: what a Trainium2 host offers for each step of a measurement,
which path kernelopt will take, and what is missing with the fix.

Steps: gate (find an idle device), compile, kernel (with a program: its kernel's
NKI namespace against the host's, doctor_kernel.py), run, time, profile, baseline
(the compiler-baseline row), check (the numerics checks). Each finding is a Finding:
``has`` (what the host has), ``path`` (what kernelopt will use, None: no way),
``missing`` and ``fix``; ``status`` is "ok", "warn" (a path, with a caveat),
"missing" (a required step has no path: the command exits non-zero) or
"optional" (the baseline row only).

The same probe the measurements use (kernelopt.neuron.steps probe, in each
environment) supplies the SDK findings; the gate's own survey, the process table
(``ps``) and the program's settings the rest.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass
from typing import Any

from kernelopt.devices.base import GateError
from kernelopt.devices.neuron import NeuronGate, parse_neuron_ls
from kernelopt.devices.own_compiles import in_flight
from kernelopt.hosts.base import Host, HostError
from kernelopt.neuron.calls import DriverCalls, ProbeError
from kernelopt.neuron.facts import NEURON_BIN, NRTPY_LIBRARY, PROFILERS
from kernelopt.neuron.sdk import SdkPlan
from kernelopt.program import NeuronConfig, Program

STEPS = ("gate", "compile", "run", "time", "profile", "baseline", "check")
REQUIRED = ("gate", "compile", "run", "time", "check")
NRTPY_LIB = NRTPY_LIBRARY
COMPILERS = ("neuronx-cc", "walrus")

NRTPY_FIX = (
    "create an nrtpy environment of its own (python -m venv ~/venvs/nrtpy && "
    "~/venvs/nrtpy/bin/pip install nrtpy numpy <kernelopt>), add "
    f"'export LD_LIBRARY_PATH={NRTPY_LIB}:$LD_LIBRARY_PATH' to its bin/activate, and set "
    "device.neuron.runtime_activate to that script"
)


@dataclass(frozen=True)
class Finding:
    step: str
    status: str  # ok, warn, missing, optional
    has: str
    path: str | None
    missing: str = ""
    fix: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Report:
    host: str
    findings: tuple[Finding, ...]
    plan: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        return not any(f.status == "missing" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "ok": self.ok,
            "steps": [f.to_json() for f in self.findings],
            "sdk": self.plan,
        }

    def text(self) -> str:
        lines = [f"kernelopt doctor: host {self.host}"]
        if self.plan:
            lines.append(
                f"  SDK: generation {self.plan.get('generation') or 'unknown'}, path "
                f"{self.plan.get('path') or 'none'} ({self.plan.get('path_chosen')})"
            )
        for f in self.findings:
            lines.append(f"  {f.step:<9} {f.status.upper():<8} {f.has}")
            if f.path:
                lines.append(f"            path: {f.path}")
            if f.missing:
                lines.append(f"            missing: {f.missing}")
            if f.fix:
                lines.append(f"            fix: {f.fix}")
        verdict = "ready" if self.ok else "not ready: a required step has no path"
        lines.append(f"  => {verdict}")
        return "\n".join(lines) + "\n"


def leftover_compilers(host: Host) -> list[tuple[int, str]]:
    """neuronx-cc / walrus processes in the host's process table (neuron-ls lists only
    processes that use a device, so a residual compiler never shows there), except the
    compiles kernelopt itself is running there (own_compiles.py)."""
    result = host.run(["ps", "-eo", "pid=,args="], timeout=30)
    if not result.ok:
        return []
    found = []
    for line in result.stdout.splitlines():
        pid, _, args = line.strip().partition(" ")
        words = [w.rsplit("/", 1)[-1] for w in args.split()[:2]]
        if pid.isdigit() and any(w in COMPILERS for w in words):
            found.append((int(pid), args.strip()))
    ours = in_flight(host, [pid for pid, _ in found], 30)  # kernelopt's own compiles
    return [(pid, args) for pid, args in found if pid not in ours]


def _gate(host: Host, gate: NeuronGate, lnc: int) -> Finding:
    leftovers = leftover_compilers(host)
    try:
        statuses = gate.survey(host)
    except (GateError, HostError) as exc:
        return Finding(
            "gate",
            "missing",
            f"the Neuron tools could not list devices: {exc}",
            None,
            "neuron-ls / neuron-monitor (aws-neuronx-tools)",
            f"install aws-neuronx-tools (its tools live in {NEURON_BIN}) on the host",
        )
    listing = host.run(
        f'PATH={shlex.quote(":".join(gate.search_path))}:"$PATH"; export PATH; neuron-ls -j',
        timeout=60,
    )
    host_lnc = None
    if listing.ok:
        try:
            devices = parse_neuron_ls(listing.stdout, command="neuron-ls -j", host=host.name)
            host_lnc = devices[0].get("logical_neuroncore_config") if devices else None
        except GateError:
            host_lnc = None
    idle = [s for s in statuses if s.idle]
    has = f"{len(statuses)} device(s), {len(idle)} idle; host LNC {host_lnc or 'unknown'}"
    if not statuses:
        return Finding("gate", "missing", has, None, "a Neuron device", "run on a Trn2 instance")
    if leftovers:
        names = "; ".join(f"pid {pid}: {args[:80]}" for pid, args in leftovers)
        return Finding(
            "gate",
            "missing",
            has,
            None,
            f"a host without leftover compiler processes ({names})",
            "stop them once their compile is no longer needed (kill "
            + " ".join(str(p) for p, _ in leftovers)
            + "): a residual neuronx-cc/walrus makes the runtime fail with NRT_FAILURE",
        )
    path = "neuron-ls + neuron-monitor, then a device lock"
    if host_lnc is not None and host_lnc != lnc:
        return Finding(
            "gate",
            "warn",
            has,
            path,
            f"the host runs LNC={host_lnc} but device.neuron.lnc is {lnc}: kernels are "
            f"compiled and run with LNC={lnc} (NEURON_LOGICAL_NC_CONFIG), while the host's "
            f"core ids are in LNC={host_lnc} numbering",
            f"set device.neuron.lnc: {host_lnc} to run as the host is configured, or "
            f"configure the host for LNC={lnc}",
        )
    if not idle:
        reasons = "; ".join(f"device {s.device}: {s.reason}" for s in statuses)
        return Finding("gate", "warn", has, path, f"an idle device now ({reasons})", "wait")
    return Finding("gate", "ok", has, path)


def _compile(plan: SdkPlan, probe: dict[str, Any]) -> Finding:
    modules = probe.get("modules") or {}
    if not plan.compile_api and not plan.baremetal:
        return Finding(
            "compile",
            "missing",
            "no NKI compiler in the compile environment",
            None,
            "nki (nki.compiler.driver) or neuronx-cc (neuronxcc.nki_standalone): "
            + "; ".join(p for p in plan.problems if p.startswith(("nki", "neuronxcc"))),
            "install the Neuron SDK's nki wheel (pip install nki neuronx-cc) into the "
            "environment device.neuron.activate sources, or point device.neuron.activate at it",
        )
    if plan.path == "baremetal":
        shapes = ((modules.get("neuronxcc.nki") or {}).get("shapes")) or {}
        shape = ", ".join(f"{n}{tuple(p or ())}" for n, p in shapes.items() if p is not None)
        has = f"neuronxcc.nki (NKI beta 1) {plan.compile_api_version or ''}".strip()
        return Finding(
            "compile",
            "warn",
            f"{has}; neuronx-cc {plan.compiler_version}",
            f"neuronxcc.nki.baremetal compiles on the device host inside the lease: {shape}",
            "the nki.* namespace (import nki): only neuronxcc.nki here (SDK before 2.27), so "
            "kernels are shipped in beta 1: a KernelIR kernel as the beta-1 rendering of its "
            "knobs, a hand-written nki.* kernel fails before it is shipped",
            "upgrade the host to Neuron 2.27 or later (pip install nki) to run nki.* kernels",
        )
    key = (
        "nki.compiler.driver" if plan.compile_api == "nki.compiler" else "neuronxcc.nki_standalone"
    )
    shapes = (modules.get(key) or {}).get("shapes") or {}
    shape = ", ".join(f"{name}{tuple(p or ())}" for name, p in shapes.items() if p is not None)
    has = (
        f"{key} {plan.compile_api_version or ''}".strip() + f"; neuronx-cc {plan.compiler_version}"
    )
    path = f"{plan.compile_api}: {shape}" if shape else plan.compile_api
    if plan.baremetal:
        path = f"{path}; beta-1 kernels: neuronxcc.nki.baremetal (inside the lease)"
    return Finding("compile", "ok", has, path)


def _libnrt_fix(error: str, script: str | None) -> tuple[str, str] | None:
    """(missing, fix) when nrtpy is installed but its import cannot load libnrt: the run
    environment lacks the runtime's libraries on LD_LIBRARY_PATH (nrtpy-getting-started)."""
    if "libnrt" not in error:
        return None
    where = script or "the nrtpy environment's activate script (device.neuron.runtime_activate)"
    return (
        f"{NRTPY_LIB} on LD_LIBRARY_PATH in the run environment: nrtpy is installed but "
        f"cannot load libnrt ({error.splitlines()[0][:160]})",
        f"add 'export LD_LIBRARY_PATH={NRTPY_LIB}:$LD_LIBRARY_PATH' to {where}",
    )


def _nrtpy_run_and_time(plan: SdkPlan, runtime_probe: dict[str, Any]) -> tuple[Finding, Finding]:
    """Run and time on the nrtpy path: the runtime, its libraries, its device benchmark."""
    nrtpy = (runtime_probe.get("modules") or {}).get("nrtpy") or {}
    env = runtime_probe.get("env") or {}
    has = f"nrtpy {plan.runtime_version} ({runtime_probe.get('python')})"
    library = env.get("LD_LIBRARY_PATH") or ""
    run = Finding("run", "ok", has, "nrtpy.NrtpyModel: load, run, device-side output check")
    if NRTPY_LIB not in library.split(":"):
        run = Finding(
            "run",
            "warn",
            has,
            run.path,
            f"LD_LIBRARY_PATH in the run environment does not hold {NRTPY_LIB}",
            f"add 'export LD_LIBRARY_PATH={NRTPY_LIB}:$LD_LIBRARY_PATH' to the script "
            "device.neuron.runtime_activate names",
        )
    bench = (nrtpy.get("shapes") or {}).get("NrtpyModel.benchmark")
    time = Finding(
        "time",
        "ok" if bench else "warn",
        "NrtpyModel.benchmark"
        + (f"{tuple(p for p in bench if p != 'self')}" if bench else ": absent"),
        "benchmark(mode='device'): min and median of device.neuron.iterations"
        if bench
        else f"the profiler's total_time ({plan.profiler})",
    )
    return run, time


def _run_and_time(
    plan: SdkPlan, runtime_probe: dict[str, Any], script: str | None = None
) -> tuple[Finding, Finding]:
    nrtpy = (runtime_probe.get("modules") or {}).get("nrtpy") or {}
    if plan.path == "nrtpy" and plan.runtime:
        return _nrtpy_run_and_time(plan, runtime_probe)
    if plan.path == "baremetal" and plan.baremetal:
        profiler = plan.profiler
        run = Finding(
            "run",
            "ok" if profiler else "missing",
            f"neuronxcc.nki.baremetal, no nrtpy ({str(nrtpy.get('error', 'absent'))[:80]})",
            "neuronxcc.nki.baremetal on the leased core: compiles, runs on the seeded inputs, "
            "returns the outputs",
        )
        time = Finding(
            "time",
            "ok" if profiler else "missing",
            f"{profiler} {plan.profiler_version}; neuronxcc.nki.benchmark",
            f"{profiler} capture total_time of baremetal's NEFF, the minimum over up to 5 "
            "captures; nki.benchmark's neuron-bench percentiles beside it (they include "
            "host-device transfers)"
            if profiler
            else None,
            "" if profiler else "a profiler CLI to time the NEFF",
            "" if profiler else f"install aws-neuronx-tools (neuron-profile, in {NEURON_BIN})",
        )
        return run, time
    if plan.path == "capture":
        profiler = plan.profiler
        run = Finding(
            "run",
            "ok",
            f"no nrtpy in the run environment ({nrtpy.get('error', 'absent')[:120]})",
            f"{profiler} capture of the NEFF fed the seeded inputs",
        )
        if any(p.startswith("sdk_path:") for p in plan.problems):
            run = Finding(
                "run",
                "warn",
                run.has,
                run.path,
                "nrtpy: this host's nki is SDK >= 2.32, whose runtime for NEFFs is nrtpy",
                NRTPY_FIX,
            )
        time = Finding(
            "time",
            "ok",
            f"{profiler} {plan.profiler_version}",
            f"{profiler} capture total_time, the minimum over up to 5 captures",
        )
        return run, time
    problem = plan.runtime_problem() or "; ".join(plan.problems)
    need, fix = _libnrt_fix(str(nrtpy.get("error") or ""), script) or (
        "a way to run a NEFF",
        NRTPY_FIX,
    )
    missing = Finding("run", "missing", problem[:300], None, need, fix)
    return missing, Finding("time", "missing", "nothing runs a NEFF", None, "see run", fix)


def _profile(plan: SdkPlan) -> Finding:
    if plan.profiler:
        return Finding(
            "profile",
            "ok",
            f"{plan.profiler} {plan.profiler_version}",
            f"{plan.profiler} capture / view --output-format summary-json",
        )
    return Finding(
        "profile",
        "warn" if plan.path == "nrtpy" else "missing",
        f"none of {', '.join(PROFILERS)} on PATH",
        None,
        "a profiler CLI",
        f"install aws-neuronx-tools (neuron-explorer, in {NEURON_BIN})",
    )


def _baseline(plan: SdkPlan, probe: dict[str, Any]) -> Finding:
    modules = probe.get("modules") or {}
    if plan.baseline:
        found = next(
            m
            for m in ("nkipy.core.compile", "nkipy.runtime.execute", "neuronpy.core.compile")
            if (modules.get(m) or {}).get("ok")
        )
        shapes = (modules.get(found) or {}).get("shapes") or {}
        shape = ", ".join(f"{k}{tuple(v)}" for k, v in shapes.items() if v)
        return Finding(
            "baseline", "ok", f"{found}: {shape}", f"{plan.baseline}, timed like the candidates"
        )
    return Finding(
        "baseline",
        "optional",
        "neither nkipy nor neuronpy in the compile environment: the baseline row is skipped",
        None,
        "nkipy (only for the compiler-baseline row)",
        "pip install nkipy into the environment device.neuron.activate sources",
    )


def _check(plan: SdkPlan) -> Finding:
    if plan.path == "baremetal" and plan.baremetal:
        return Finding(
            "check",
            "ok",
            "kernelopt's CPU simulator (beta-1 kernels too); baremetal returns the outputs",
            "CPU check of the shipped kernel, then baremetal's outputs against f_numpy",
        )
    if plan.path == "nrtpy":
        return Finding(
            "check",
            "ok",
            "kernelopt's CPU simulator; nrtpy returns the device's outputs",
            "CPU check before compiling, then the device's output against f_numpy",
        )
    if plan.path == "capture" and plan.profiler:
        # The option and its log line follow the public runner (awslabs/nki-autotune);
        # the Neuron docs are silent, so a profiler may save nothing: then it says so.
        return Finding(
            "check",
            "ok",
            f"kernelopt's CPU simulator; {plan.profiler} capture --save-output",
            "CPU check before compiling, then the outputs a capture saves against f_numpy "
            "(where the profiler saves none, the record says so and the CPU check is the gate)",
        )
    return Finding(
        "check",
        "missing",
        "kernelopt's CPU simulator; nothing runs a NEFF to read its outputs",
        None,
        "a device-side output check (nrtpy, SDK >= 2.32; or a profiler's capture)",
        "",
    )


def diagnose(
    host: Host,
    settings: NeuronConfig,
    python: str,
    gate: NeuronGate | None = None,
    program: Program | None = None,
) -> Report:
    """Every step's finding on ``host`` for these settings (and, with ``program``, its
    kernel's namespace against the host's)."""
    gate = gate or NeuronGate()
    findings = [_gate(host, gate, settings.lnc)]
    calls = DriverCalls(settings, python, workload="", kernel="")
    try:
        plan, probes = calls.probe_all(host)
    except (ProbeError, HostError) as exc:
        text = str(exc)
        fix = (
            "install kernelopt into each environment (pip install <kernelopt>) and check that "
            "device.neuron.activate / runtime_activate name scripts that exist on the host"
        )
        for step in STEPS[1:]:
            status = "optional" if step == "baseline" else "missing"
            findings.append(Finding(step, status, text[:300], None, "a working probe", fix))
        return Report(host.name, tuple(findings), None)
    compile_probe, runtime_probe = probes
    findings.append(_compile(plan, compile_probe))
    if program is not None:
        from kernelopt.neuron.doctor_kernel import kernel_finding

        findings.append(kernel_finding(program, plan))
    script = settings.runtime_activate or settings.activate
    findings.extend(_run_and_time(plan, runtime_probe, script))
    findings.append(_profile(plan))
    findings.append(_baseline(plan, compile_probe))
    findings.append(_check(plan))
    return Report(host.name, tuple(findings), plan.to_json())
