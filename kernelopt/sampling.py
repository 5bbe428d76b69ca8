"""Sampling an attempt on a device: one measurement, or candidate and BEST interleaved.

A device from the executor is held for a whole judgement, so the candidate
and BEST are measured on the same device, alternating, until the noise rule
decides (``decided``). A deterministic target, a baseline and a candidate that
failed are measured once. Several attempts are sampled at once on as many
devices. A host fault is retried once on another device, then it is a ``Fault``
(kernelopt's, not the candidate's: the attempt stays pending); when no device
frees up within device.max_wait, the result is ``NoDevice``: a status, not an
exception through the loop. BEST failing its re-measure beside a candidate is such a
host fault: BEST was measured fine before, so the device or host failed (a transient
NRT_FAILURE, a compiler left running), never the candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kernelopt.decide import Verdict
from kernelopt.executor import Device, Executor, HostFault, NoIdleDeviceError
from kernelopt.measurement import FAILED, Fault, Measurement
from kernelopt.records import Pair, Pending
from kernelopt.targets.base import Target


class Reporter(Protocol):
    """Where progress goes (the CLI prints it; a library caller may ignore it)."""

    def event(self, name: str, **data: Any) -> None: ...


class SilentReporter:
    def event(self, name: str, **data: Any) -> None:
        pass


@dataclass(frozen=True)
class NoDevice:
    """No idle device within device.max_wait: the attempt cannot be measured."""

    reason: str


Sampled = list[Pair] | NoDevice
Decided = Callable[[Sequence[Pair]], bool]  # has the rule decided on these pairs?


@dataclass(frozen=True)
class _Named:
    """A name standing in for a host in HostPool slots (the device knows its host)."""

    name: str


class Sampler:
    """Measures committed attempts (their trees) on the executor's devices."""

    def __init__(
        self,
        target: Target,
        executor: Executor,
        reporter: Reporter,
        best_tree: Callable[[], Path],
        check: Callable[[Measurement], Measurement] = lambda m: m,
    ):
        self.target = target
        self.executor = executor
        self.reporter = reporter
        self.best_tree = best_tree
        self.check = check  # turns a nonsense metric into a failed measurement
        # The compiler baseline, measured on the lease that measured the run's baseline
        # (targets whose baseline runs on a device): it is the same run, so it never
        # waits for, or fails on, a device of its own.
        self.reference: Measurement | None = None

    def sample(self, att: Pending, tree: Path, decided: Decided) -> Sampled:
        """Judge on one device; a host fault is retried once on another device."""
        try:
            for retry in (False, True):
                try:
                    with self.executor.device() as device:
                        return self._on(device, att, tree, decided)
                except HostFault as exc:
                    if retry:  # not the candidate's failure: it stays pending
                        raise Fault(f"host fault, retried once on another device: {exc}") from None
                    self.reporter.event("host_fault", attempt=att.n, error=str(exc))
        except NoIdleDeviceError as exc:
            return NoDevice(str(exc))
        raise AssertionError("unreachable")

    def sample_many(
        self, attempts: Sequence[tuple[Pending, Path]], decided: Decided
    ) -> dict[int, Sampled]:
        """Sample several attempts at once, one device each (as many as the executor has)."""
        from kernelopt.hosts.pool import HostPool

        self.best_tree()  # exported once, before the threads share it
        trees = {att.n: tree for att, tree in attempts}
        try:
            with self.executor.devices(len(attempts)) as devices:
                pool = HostPool([(_Named(d.host_name + "/" + d.name), d) for d in devices])
                jobs = pool.map(
                    [att for att, _ in attempts],
                    lambda att, _host, dev: self._on(dev, att, trees[att.n], decided),
                )
        except NoIdleDeviceError as exc:
            return {att.n: NoDevice(str(exc)) for att, _ in attempts}
        out: dict[int, Sampled] = {}
        for (att, _), job in zip(attempts, jobs, strict=True):
            if job.value is None:  # the pool retried it once: a fault, the batch stays pending
                raise Fault(f"host fault on attempt #{att.n}, retried once: {job.error}")
            out[att.n] = job.value
        return out

    def _reference(self, device: Device, tree: Path) -> Measurement | None:
        """The compiler baseline on ``device`` while it is held, where the target's runs
        on a device; its failure is its row's, never the baseline's."""
        if not getattr(self.target, "reference_on_device", False):
            return None
        try:
            return device.reference(self.target, tree)
        except HostFault as exc:
            return Measurement.failure(FAILED, f"the compiler baseline was not measured: {exc}")

    def _on(self, device: Device, att: Pending, tree: Path, decided: Decided) -> list[Pair]:
        """The candidate's samples, paired with BEST's on the same device when noisy."""
        first = self.check(device.measure(self.target, tree))
        if att.kind == Verdict.BASELINE and first.ok:
            self.reference = self._reference(device, tree)
        if att.kind == Verdict.BASELINE or not first.ok or self.target.deterministic:
            return [(first, None)]
        best_tree = self.best_tree()
        samples: list[Pair] = []
        candidate = first
        while True:
            best = self.check(device.measure(self.target, best_tree))
            if not best.ok:
                # Not the candidate's failure: re-gated and retried once (sample), then a
                # Fault that leaves the attempt pending.
                raise HostFault(
                    f"{device.host_name}/{device.name}: re-measuring BEST failed "
                    f"({best.status}): {best.error.strip()[:400]}"
                )
            samples.append((candidate, best))
            if not (candidate.ok and best.ok) or decided(samples):
                return samples
            candidate = self.check(device.measure(self.target, tree))
            if not candidate.ok:
                samples.append((candidate, None))
                return samples
            self.reporter.event("sample", count=len(samples) + 1)
