"""A candidate's compile side on a Neuron target: the CPU check of the kernel a host
gets, the compile (deferred to the device on the baremetal path), and the reuse of an
identical earlier build (`builds.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelopt.hosts.base import Host, HostError
from kernelopt.neuron import remote
from kernelopt.neuron.builds import Build, build_key
from kernelopt.neuron.calls import artifact_paths
from kernelopt.neuron.cpu_check import CheckSpec, in_record, run_cpu_check
from kernelopt.neuron.sdk import SdkPlan
from kernelopt.neuron.shipping import ForHost

if TYPE_CHECKING:
    from kernelopt.neuron.target import NeuronTarget


@dataclass(frozen=True)
class Prepared:
    tree: Path
    data: bytes
    key: str
    macs: int
    digest: str  # of the kernel and workload sources
    work: Any = None  # the math's roofline work (kernelopt.sim.roofline.RooflineWork)


@dataclass(frozen=True)
class Compiled:
    directory: str | None
    record: dict[str, Any]
    build: str | None = None  # the key to keep a fresh build under, once its NEFF is fetched
    path: str | None = None  # the measuring path this candidate takes (sdk.PATHS)


def cpu_check(target: NeuronTarget, p: Prepared, kernel: Path) -> dict[str, Any]:
    """The CPU simulator's numerics check of the kernel shipped, on this machine."""
    spec = CheckSpec(
        kernel=str(kernel),
        workload=str(p.tree / target.workload),
        func=target.func,
        seeds=target.seeds,
        atol=target.atol,
        rtol=target.rtol,
        rel_l2=target.rel_l2,
        mac_count=p.macs or None,
    )
    return run_cpu_check(spec, cwd=p.tree, timeout=target.settings.compile_timeout_s)


def build(target: NeuronTarget, host: Host, sdk: SdkPlan, p: Prepared, ship: ForHost) -> Compiled:
    """The CPU check of the shipped kernel, then the compile (deferred to the device on
    the baremetal path); or the NEFF of an identical build made before."""
    baremetal = ship.path == "baremetal"
    key = build_key_of(target, sdk, ship)
    earlier = None if baremetal else target.builds.get(key)
    reused = reuse(target, host, ship, earlier) if earlier is not None else None
    if reused is not None:
        return reused
    found, incorrect = in_record(cpu_check(target, p, ship.kernel))
    found["kernel_api"] = ship.record
    if incorrect is not None:
        return Compiled(None, {**incorrect, "kernel_api": ship.record})
    problem = sdk.compile_problem() or (
        None
        if ship.compile_api or ship.path
        else "a neuronxcc.nki (NKI beta 1) kernel is compiled and run by "
        "neuronxcc.nki.baremetal and .benchmark, which this host's run environment does "
        "not have"
    )
    if baremetal and target.settings.pipeline_options:
        problem = (
            f"pipeline_options {list(target.settings.pipeline_options)} need the NKI "
            "compiler API (nki.compiler); neuronxcc.nki.baremetal takes neuronx-cc options "
            "only: write the compiler's own spelling in device.neuron.compiler_args"
        )
    if problem:
        return Compiled(None, {**found, "stage": "compile", "status": "failed", "error": problem})
    try:
        directory = remote.ship_tree(host, ship.data)
    except HostError as exc:
        return Compiled(None, {**found, "stage": "ship", "status": "failed", "error": str(exc)})
    if baremetal:
        # neuronxcc.nki.baremetal compiles on the device host inside the call, so
        # that compile happens (and is timed) inside the device lease.
        deferred = {"stage": "compile", "status": "ok", "compile_api": ship.compile_api}
        return Compiled(directory, {**found, **deferred}, None, ship.path)
    record = {**found, **target.calls.compile(host, sdk, directory, ship.compile_api)}
    return Compiled(directory, record, key, ship.path)


def build_key_of(target: NeuronTarget, sdk: SdkPlan, ship: ForHost) -> str:
    """Everything the CPU check and the compile depend on."""
    s = target.settings
    return build_key(
        ship.digest,
        [target.kernel, target.workload, target.func],
        [target.seeds, target.atol, target.rtol, target.rel_l2],
        sdk.to_json(),
        [s.activate, s.lnc, s.opt, list(s.compiler_args), list(s.pipeline_options)],
        ship.record,
    )


def reuse(target: NeuronTarget, host: Host, ship: ForHost, build: Build) -> Compiled | None:
    """The tree shipped with the build's NEFF (and compile log) already in out/;
    None when the kept files cannot be read (the caller builds afresh)."""
    try:
        files = {name: path.read_bytes() for name, path in build.files.items()}
    except OSError:
        return None
    try:
        directory = remote.ship_tree(host, ship.data)
    except HostError as exc:
        return Compiled(None, {"stage": "ship", "status": "failed", "error": str(exc)})
    try:
        for name, path in artifact_paths(directory).items():
            if name in files:
                host.put_bytes(files[name], path)
    except HostError as exc:
        host.remove_tree(directory)
        return Compiled(None, {"stage": "ship", "status": "failed", "error": str(exc)})
    return Compiled(directory, build.as_reused(), path=ship.path)
