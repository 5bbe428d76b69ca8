"""The nki target on a Neuron device: the hardware twin of NkiSimTarget.

For a batch of trees: lease an idle device (gate), probe the host's SDK once
(which compile API, runtime and profiler; `sdk.py`), check each candidate's
numbers on the CPU simulator (`cpu_check.py`), ship the ones that pass to
the lease's host, compile them on the host's CPUs while the device measures
them in order (driver `compile` / `measure`: device time, the device's
output checked again), fetch NEFF, NTFF, summary and compiler log into the
run's results folder, and return one Measurement per tree. Host directories
are removed afterwards. The compiler baseline goes through the very same
`measure`.

When the caller already holds a device (an executor that leased it and runs
this target on the device's host), ``measure(tree, env=binding)`` uses that
binding on this machine and skips the gate.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from kernelopt.devices.acquire import Lease, NoIdleDevice, acquire
from kernelopt.devices.base import Gate
from kernelopt.devices.locks import DEFAULT_LOCK_DIR
from kernelopt.devices.neuron import LNC_ENV
from kernelopt.hosts.base import Host, HostError
from kernelopt.hosts.local import LocalHost
from kernelopt.measurement import FAILED, SKIPPED, Measurement
from kernelopt.neuron import remote
from kernelopt.neuron.building import Compiled, Prepared, build
from kernelopt.neuron.builds import Builds
from kernelopt.neuron.calls import SLACK_S, DriverCalls, ProbeError, artifact_paths
from kernelopt.neuron.facts import VISIBLE_CORES_ENV
from kernelopt.neuron.held import NO_GATE, CallersDevice, HeldDevice, bind
from kernelopt.neuron.pipeline import compile_while_measuring
from kernelopt.neuron.record import to_measurement
from kernelopt.neuron.sdk import SdkPlan
from kernelopt.neuron.shipping import KernelApiError, for_host, scratch_dir
from kernelopt.neuron.work import device_roofline, mac_count, roofline_work
from kernelopt.program import NeuronConfig, Program
from kernelopt.targets.base import Target
from kernelopt.workload import WorkloadError, load_workload

NO_BASELINE = (
    "not measured: this host's Neuron environment has neither nkipy nor its predecessor "
    "neuronpy, so f_numpy cannot be compiled by neuronx-cc for the compiler-baseline row; "
    "install nkipy there (device.neuron.activate) to get it"
)


@dataclass(frozen=True)
class NeuronTarget(Target):
    kind: ClassVar[str] = "nki-neuron"
    # The compiler baseline runs on a device: measured on the lease that measured the
    # run's baseline (sampling.py), never gated anew.
    reference_on_device: ClassVar[bool] = True
    workload: str  # relative to the tree root
    kernel: str
    hosts: tuple[Host, ...]
    gate: Gate
    results_dir: Path
    func: str | None = None
    knobs: str | None = None  # a KernelIR target's knobs.json: renders the kernel per host
    settings: NeuronConfig = field(default_factory=NeuronConfig)
    python: str = "python3"
    poll_s: float = 600.0
    max_wait_s: float = 3600.0
    lock_dir: str = DEFAULT_LOCK_DIR
    # The CPU check before a compile: the sim device's numerics gate (decide.*).
    seeds: tuple[int, ...] = (0,)
    atol: float = 5e-3
    rtol: float = 5e-3
    rel_l2: float | None = None
    device: str = "neuron"
    deterministic: bool = False
    # The SDK plan of each host, probed once per target (a run, a try).
    _plans: dict[str, SdkPlan] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_program(
        cls,
        program: Program,
        root: Path,
        hosts: Sequence[Host],
        gate: Gate,
        *,
        run: str | None = None,
        python: str | None = None,
        lock_dir: str = DEFAULT_LOCK_DIR,
    ) -> NeuronTarget:
        """``run`` names the results subfolder (default: the program's name);
        ``python`` is the host's interpreter (default: device.python)."""
        t, d = program.target, program.device
        if not t.workload or not t.kernel:
            raise ValueError(f"{program.path}: target.workload and target.kernel are required")
        if not hosts:
            raise ValueError(f"{program.path}: device.hosts names no host to measure on")
        configured = d.neuron.results
        base = Path(configured) if configured else Path(root) / ".git" / "kernelopt" / "results"
        if configured and not base.is_absolute():
            base = Path(root) / base
        return cls(
            workload=t.workload,
            kernel=t.kernel,
            func=t.func,
            knobs=t.knobs.file if t.knobs else None,
            hosts=tuple(hosts),
            gate=gate,
            results_dir=base / (run or program.name),
            settings=d.neuron,
            python=python or d.python,
            poll_s=d.poll_s,
            max_wait_s=d.max_wait_s,
            lock_dir=lock_dir,
            seeds=tuple(range(program.decide.correctness_seeds)),
            atol=program.decide.atol,
            rtol=program.decide.rtol,
            rel_l2=program.decide.rel_l2,
        )

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> NeuronTarget:
        """The target ``spec()`` describes, measuring on this machine only (the
        executor that sent the spec leased the device and passes its binding)."""
        settings = dict(spec["settings"])
        settings["compiler_args"] = tuple(settings.get("compiler_args") or ())
        settings["pipeline_options"] = tuple(settings.get("pipeline_options") or ())
        check = spec.get("check") or {}
        results = Path(spec.get("results_dir") or "~/.cache/kernelopt/results").expanduser()
        return cls(
            workload=spec["workload"],
            kernel=spec["kernel"],
            func=spec.get("func"),
            knobs=spec.get("knobs"),
            hosts=(LocalHost(),),
            gate=NO_GATE,
            results_dir=results,
            settings=NeuronConfig(**settings),
            python=spec.get("python") or "python3",
            # No gate to wait for: a measurement without the caller's binding fails at once.
            poll_s=1.0,
            max_wait_s=0.0,
            seeds=tuple(check.get("seeds") or (0,)),
            atol=float(check.get("atol", 5e-3)),
            rtol=float(check.get("rtol", 5e-3)),
            rel_l2=check.get("rel_l2"),
        )

    def spec(self) -> dict[str, Any]:
        """A JSON description for measuring on a host through ``kernelopt.remote``."""
        s = self.settings
        return {
            "kind": self.kind,
            "workload": self.workload,
            "kernel": self.kernel,
            "func": self.func,
            "knobs": self.knobs,
            "settings": {
                **asdict(s),
                "compiler_args": list(s.compiler_args),
                "pipeline_options": list(s.pipeline_options),
            },
            "check": {
                "seeds": list(self.seeds),
                "atol": self.atol,
                "rtol": self.rtol,
                "rel_l2": self.rel_l2,
            },
            "python": self.python,
            # compile, then run and profile, each bounded by compile_timeout; on the
            # baremetal path the measure step compiles twice more (baremetal, benchmark).
            "timeout_s": 4 * s.compile_timeout_s + SLACK_S,
        }

    def measure(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        return self.measure_batch([tree], env=env)[0]

    def measure_batch(
        self, trees: Sequence[Path], env: Mapping[str, str] | None = None
    ) -> list[Measurement]:
        """One Measurement per tree, in order; compiles overlap measurements.

        With ``env`` holding NEURON_RT_VISIBLE_CORES the caller has leased the
        device and this process runs on its host: no gate, this machine.
        """
        prepared: list[Prepared | Measurement] = [self._prepare(Path(t)) for t in trees]
        ready = [p for p in prepared if isinstance(p, Prepared)]
        done: dict[int, Measurement] = {}
        if ready:
            lease = self._lease(env)
            if isinstance(lease, Measurement):
                return [p if isinstance(p, Measurement) else lease for p in prepared]
            try:
                with lease:
                    sdk = self._plan(lease.host)
                    workers = self.calls.workers(lease.host, len(ready))
                    results = compile_while_measuring(
                        ready,
                        lambda p: self._compile(lease.host, sdk, p),
                        lambda p, c: self._measure(lease, sdk, p, c),
                        workers,
                    )
            except (HostError, ProbeError) as exc:  # the host went away: every result says so
                lost = Measurement.failure(
                    FAILED, str(exc), device=self.device, host=lease.host.name
                )
                return [p if isinstance(p, Measurement) else lost for p in prepared]
            done = {id(p): m for p, m in zip(ready, results, strict=True)}
        return [p if isinstance(p, Measurement) else done[id(p)] for p in prepared]

    def reference(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        """The compiler baseline: f_numpy through nkipy (or neuronpy) and neuronx-cc,
        measured on a leased device through exactly the candidates' path (`_measure`);
        a skipped row, with the reason, where the host has neither tracer. With ``env``
        holding the caller's binding (the lease that measured the run's baseline) it is
        measured there, with no gate."""
        prepared = self._prepare(Path(tree))
        if isinstance(prepared, Measurement):
            return prepared
        prepared = replace(prepared, key=f"reference-{prepared.key}")
        lease = self._lease(env)
        if isinstance(lease, Measurement):
            return lease
        with lease:
            host = lease.host
            what = {"what": "f_numpy compiled by neuronx-cc (nkipy)"}
            try:
                sdk = self._plan(host)
                what = {"what": f"f_numpy compiled by neuronx-cc ({sdk.baseline or 'nkipy'})"}
                if sdk.baseline is None:
                    return Measurement.failure(
                        SKIPPED, NO_BASELINE, device=self.device, host=host.name, extra=what
                    )
                directory = remote.ship_tree(host, prepared.data)
            except (HostError, ProbeError) as exc:
                return Measurement.failure(
                    FAILED, str(exc), device=self.device, host=host.name, extra=what
                )
            record = self.calls.compile_reference(host, directory)
            # A NEFF is timed like the candidates' NEFFs: on the baremetal path, by the
            # profiler's captures (nki.benchmark takes a kernel, not a NEFF).
            path = "capture" if sdk.path == "baremetal" else sdk.path
            compiled = Compiled(directory, record, path=path)
            measured = self._measure(lease, sdk, prepared, compiled)
        return replace(measured, extra={**measured.extra, **what})

    @property
    def calls(self) -> DriverCalls:
        """The driver commands for this target's kernel and settings."""
        return DriverCalls(self.settings, self.python, self.workload, self.kernel, self.func)

    def _lease(self, env: Mapping[str, str] | None = None) -> Lease | CallersDevice | Measurement:
        if env and env.get(VISIBLE_CORES_ENV):
            kept = {k: env[k] for k in (VISIBLE_CORES_ENV, LNC_ENV) if k in env}
            return CallersDevice(LocalHost(), kept)
        lease = acquire(
            self.gate,
            self.hosts,
            poll_s=self.poll_s,
            max_wait_s=self.max_wait_s,
            lock_dir=self.lock_dir,
        )
        if isinstance(lease, NoIdleDevice):
            return Measurement.failure(
                FAILED, f"no idle Neuron device: {lease.reason}", device=self.device
            )
        return lease

    # -- steps ---------------------------------------------------------------

    def _prepare(self, tree: Path) -> Prepared | Measurement:
        """Pack the tree and count the workload's MACs here, before any host work."""
        try:
            workload = load_workload(tree / self.workload, require=("f_numpy", "INPUT_SPECS"))
        except WorkloadError as exc:
            return Measurement.failure(FAILED, str(exc), device=self.device)
        if not (tree / self.kernel).is_file():
            return Measurement.failure(
                FAILED, f"{tree / self.kernel}: kernel file does not exist", device=self.device
            )
        digest = hashlib.sha256()
        for rel in (self.kernel, self.workload):
            digest.update((tree / rel).read_bytes())
        hexdigest = digest.hexdigest()
        key = f"{hexdigest[:12]}-{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() % 10**6:06d}"
        packed = remote.pack_tree(tree)
        return Prepared(tree, packed, key, mac_count(workload), hexdigest, roofline_work(workload))

    def _plan(self, host: Host) -> SdkPlan:
        """The host's SDK path, probed once per host for this target (a run, a try)."""
        if host.name not in self._plans:
            self._plans[host.name] = self.calls.probe(host)
        return self._plans[host.name]

    def _compile(self, host: Host, sdk: SdkPlan, p: Prepared) -> Compiled:
        """The kernel in the namespace the host takes, its CPU check, then (when that
        does not stop the candidate) the compile; or the NEFF of an identical build
        made before (`builds.py`). On the baremetal path the device compiles."""
        scratch = scratch_dir()
        try:
            try:
                ship = for_host(
                    p.tree,
                    self.kernel,
                    self.workload,
                    self.knobs,
                    self.settings.kernel_api,
                    sdk,
                    p.data,
                    scratch,
                )
            except KernelApiError as exc:
                return Compiled(None, {"stage": "ship", "status": "failed", "error": str(exc)})
            return build(self, host, sdk, p, ship)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    @property
    def builds(self) -> Builds:
        return Builds(self.results_dir / "builds")

    def _measure(self, lease: HeldDevice, sdk: SdkPlan, p: Prepared, c: Compiled) -> Measurement:
        """Run, check, time and profile one compiled NEFF: the one path for candidates
        and the compiler baseline alike."""
        started = time.monotonic()
        host = lease.host
        measured: dict[str, Any] | None = None
        artifacts: dict[str, str] = {}
        compiled = c.directory is not None and c.record.get("status") == "ok"
        binding, where = bind(lease, self.settings.lnc)
        try:
            problem = sdk.runtime_problem() or where.get("error")
            if compiled and problem:
                measured = {"stage": "measure", "status": "failed", "error": problem}
            elif compiled and c.directory is not None:
                measured = self.calls.measure(
                    host, sdk, c.directory, p.macs, binding, c.path or sdk.path
                )
            if c.directory is not None:
                wanted = artifact_paths(c.directory)
                artifacts = remote.fetch(host, wanted, self.results_dir / p.key)
                if c.build is not None:
                    self.builds.put(c.build, c.record, artifacts, origin=p.key)
        finally:
            if c.directory is not None:
                host.remove_tree(c.directory)
        s = self.settings
        if measured and measured.get("status") == "ok" and p.work is not None:
            measured["roofline"] = device_roofline(p.work, float(measured["min_s"]), s.lnc)
        return to_measurement(
            c.record,
            measured,
            host=host.name,
            device=f"{lease.device}@{binding.get(VISIBLE_CORES_ENV, '')}",
            duration_s=float(c.record.get("compile_s", 0.0)) + time.monotonic() - started,
            artifacts=artifacts,
            extra={
                "key": p.key,
                "lnc": s.lnc,
                "opt": s.opt,
                "compiler_args": list(s.compiler_args),
                "pipeline_options": list(s.pipeline_options),
                "sdk": sdk.to_json(),
                "compiler_version": sdk.compiler_version,
                "bound": where,
            },
        )
