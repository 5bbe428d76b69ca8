"""The driver commands a Neuron target runs on a host, with their arguments and
the Python environment each runs in.

Compile steps and the compile-side probe run in the NKI environment
(device.neuron.activate, device.python); `measure` and the run-side probe in
the nrtpy one (device.neuron.runtime_activate / runtime_python, defaulting to
the NKI one). Every command runs from the attempt's own ``out`` folder:
``python -m`` puts the working directory on sys.path, and the tools drop
their logs there. The host's SDK is probed in both environments once and
turned into an SdkPlan (sdk.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelopt.hosts.base import Host
from kernelopt.neuron import remote
from kernelopt.neuron.facts import (
    COMPILE_LOG_NAME,
    DEVICE_CHECK_SEED,
    NEFF_NAME,
    NTFF_NAME,
    PROFILERS,
    SUMMARY_NAME,
    TENSORS_NAME,
)
from kernelopt.neuron.remote import OUT, TREE
from kernelopt.neuron.sdk import SdkPlan, plan
from kernelopt.program import NeuronConfig

# Host-side commands other than the compile (which has its own timeout) and
# the measurement get this long before the driver call is abandoned.
SLACK_S = 300.0


class ProbeError(Exception):
    """The host's SDK could not be probed; the message says why."""


@dataclass(frozen=True)
class DriverCalls:
    """The driver commands for one target's kernel, workload and settings."""

    settings: NeuronConfig
    python: str
    workload: str  # relative to the tree root
    kernel: str
    func: str | None = None

    @property
    def split(self) -> bool:
        """Whether compiles and runs use different Python environments."""
        s = self.settings
        return bool(s.runtime_activate and s.runtime_activate != s.activate) or bool(
            s.runtime_python and s.runtime_python != self.python
        )

    def run(
        self,
        host: Host,
        directory: str,
        args: list[str],
        timeout: float,
        env: dict[str, str] | None = None,
        *,
        runtime: bool = False,
    ) -> dict[str, Any]:
        """One driver command in the compile environment, or with ``runtime`` in the
        run (nrtpy) environment; its JSON record."""
        s = self.settings
        return remote.run_driver(
            host,
            args,
            python=(s.runtime_python or self.python) if runtime else self.python,
            activate=(s.runtime_activate or s.activate) if runtime else s.activate,
            timeout=timeout,
            env=env,
            cwd=f"{directory}/{OUT}",
        )

    def probe(self, host: Host) -> SdkPlan:
        """The host's SDK path: the compiler is looked for where compiles run, the
        runtime and profiler where runs are. Raises ProbeError."""
        return self.probe_all(host)[0]

    def probe_all(self, host: Host) -> tuple[SdkPlan, tuple[dict[str, Any], dict[str, Any]]]:
        """The plan and the two environments' probe records (compile, run)."""
        tools = {False: "neuronx-cc", True: ",".join(PROFILERS)}
        if not self.split:
            tools = {False: ",".join((*PROFILERS, "neuronx-cc"))}
        directory = host.mkdtemp(prefix="kernelopt-neuron-probe-")
        probes = []
        try:
            host.run(["mkdir", "-p", f"{directory}/{OUT}"], timeout=30)
            for runtime, names in tools.items():
                record = self.run(
                    host, directory, ["probe", "--tools", names], SLACK_S, runtime=runtime
                )
                if record.get("status") != "ok":
                    where = "run" if runtime else "compile"
                    raise ProbeError(
                        f"probing the Neuron SDK in the {where} environment on host "
                        f"{host.name} failed: {record.get('error', 'no record')}"
                    )
                probes.append(record)
        finally:
            host.remove_tree(directory)
        found = plan(probes[0], probes[-1], split=self.split, forced=self.settings.sdk_path)
        return found, (probes[0], probes[-1])

    def compile(
        self, host: Host, sdk: SdkPlan, directory: str, api: str | None = None
    ) -> dict[str, Any]:
        """The candidate's kernel to a NEFF with ``api`` (default: the compile API the
        probe found)."""
        s = self.settings
        args = [
            "compile",
            "--api",
            str(api or sdk.compile_api),
            "--kernel",
            f"{directory}/{TREE}/{self.kernel}",
            *self._common(directory),
            "--opt",
            str(s.opt),
            *(["--func", self.func] if self.func else []),
            *[f"--compiler-arg={a}" for a in s.compiler_args],
            *[f"--pipeline-option={o}" for o in s.pipeline_options],
        ]
        return self.run(host, directory, args, s.compile_timeout_s + SLACK_S)

    def compile_reference(self, host: Host, directory: str) -> dict[str, Any]:
        """The compiler baseline's NEFF: f_numpy through nkipy and neuronx-cc."""
        args = ["compile-reference", *self._common(directory)]
        return self.run(host, directory, args, self.settings.compile_timeout_s + SLACK_S)

    def measure(
        self,
        host: Host,
        sdk: SdkPlan,
        directory: str,
        macs: int,
        binding: dict[str, str],
        path: str | None = None,
    ) -> dict[str, Any]:
        """Run, check, time and profile the NEFF in ``directory`` on the bound core; on the
        baremetal path, compile and run the kernel there first."""
        s = self.settings
        path = path or sdk.path or "nrtpy"
        args = [
            "measure",
            *self._common(directory),
            "--warmup",
            str(s.warmup),
            "--iterations",
            str(s.iterations),
            "--macs",
            str(macs),
            "--seed",
            str(DEVICE_CHECK_SEED),
            "--tolerance",
            str(s.tolerance),
            "--profiler",
            sdk.profiler or "",
            f"--profiler-version={sdk.profiler_version or ''}",
            "--path",
            path,
        ]
        timeout = s.compile_timeout_s + SLACK_S
        if path == "baremetal":
            # baremetal and benchmark each compile the kernel on the device host.
            args += [
                "--kernel",
                f"{directory}/{TREE}/{self.kernel}",
                "--opt",
                str(s.opt),
                *(["--func", self.func] if self.func else []),
                *[f"--compiler-arg={a}" for a in s.compiler_args],
            ]
            timeout += 2 * s.compile_timeout_s
        return self.run(host, directory, args, timeout, env=binding, runtime=True)

    def _common(self, directory: str) -> list[str]:
        s = self.settings
        return [
            "--workload",
            f"{directory}/{TREE}/{self.workload}",
            "--out",
            f"{directory}/{OUT}",
            "--lnc",
            str(s.lnc),
            "--timeout",
            str(s.compile_timeout_s),
        ]

    def workers(self, host: Host, count: int) -> int:
        """Parallel compiles for ``count`` candidates: the setting, else the host's CPUs."""
        if self.settings.compile_workers > 0:
            return min(self.settings.compile_workers, count)
        result = host.run(["nproc"], timeout=30)
        cpus = int(result.stdout.strip()) if result.ok and result.stdout.strip().isdigit() else 1
        return max(1, min(cpus, count))


def artifact_paths(directory: str) -> dict[str, str]:
    """Where the driver leaves an attempt's files on the host, by artifact name."""
    out = f"{directory}/{OUT}"
    return {
        "neff": f"{out}/{NEFF_NAME}",
        "ntff": f"{out}/{NTFF_NAME}",
        "summary": f"{out}/{SUMMARY_NAME}",
        "compile_log": f"{out}/{COMPILE_LOG_NAME}",
        "tensors": f"{out}/{TENSORS_NAME}",
    }
