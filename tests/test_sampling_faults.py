"""Sampling on held devices: BEST failing its re-measure is the device's fault, not the
candidate's, and the compiler baseline is measured on the lease that measured the
run's baseline."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kernelopt.decide import Verdict
from kernelopt.executor import Device
from kernelopt.judge import Best, Rule, judge
from kernelopt.measurement import FAILED, OK, Fault, Measurement
from kernelopt.records import Pending
from kernelopt.sampling import Sampler, SilentReporter


class Target:
    """Measures a tree by its name; BEST's tree fails ``best_failures`` times first."""

    kind: ClassVar[str] = "test"
    device = "test"
    deterministic = False
    reference_on_device: ClassVar[bool] = True

    def __init__(self, best: Path, best_failures: int) -> None:
        self.best = best
        self.best_failures = best_failures
        self.measured: list[tuple[str, str]] = []
        self.references: list[dict[str, str]] = []

    def measure(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        where = dict(env or {}).get("CORE", "?")
        self.measured.append((tree.name, where))
        if tree == self.best and self.best_failures:
            self.best_failures -= 1
            return Measurement.failure(FAILED, "runtime error: NRT_FAILURE(1)")
        return Measurement(status=OK, metrics={"mfu": 40.0 if tree == self.best else 44.0})

    def reference(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        self.references.append(dict(env or {}))
        return Measurement(status=OK, metrics={"mfu": 30.0})

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind}


class Devices:
    """Hands out devices core0, core1, ... one per lease; records what is held when."""

    slots = 2

    def __init__(self) -> None:
        self.leases = 0
        self.held: list[str] = []

    @contextlib.contextmanager
    def device(self) -> Iterator[Device]:
        name = f"core{self.leases}"
        self.leases += 1
        self.held.append(name)
        try:
            yield Device(name, env={"CORE": name})
        finally:
            self.held.remove(name)


def _sampler(tmp_path: Path, best_failures: int) -> tuple[Sampler, Target, Devices]:
    best = tmp_path / "best"
    target, devices = Target(best, best_failures), Devices()
    sampler = Sampler(target, devices, SilentReporter(), lambda: best)  # type: ignore[arg-type]
    return sampler, target, devices


def _decided_after(count: int) -> Any:
    return lambda samples: len(samples) >= count


def test_a_transient_failure_of_bests_remeasure_is_retried_on_a_fresh_lease(
    tmp_path: Path,
) -> None:
    sampler, target, devices = _sampler(tmp_path, best_failures=1)
    candidate = tmp_path / "candidate"
    samples = sampler.sample(Pending(1, "a" * 40, "edit", "x"), candidate, _decided_after(2))
    assert isinstance(samples, list) and all(c.ok and b is not None and b.ok for c, b in samples)
    assert devices.leases == 2  # re-gated once
    # The whole judgement ran again on the second lease: nothing of the first is kept.
    assert target.measured[:2] == [("candidate", "core0"), ("best", "core0")]
    assert all(where == "core1" for _, where in target.measured[2:])
    verdict = judge(samples, Best(40.0), Rule("mfu", "higher", 0.01), deterministic_target=False)
    assert verdict.verdict != Verdict.FAILED


def test_bests_remeasure_failing_on_two_leases_is_a_fault_and_never_a_verdict(
    tmp_path: Path,
) -> None:
    sampler, _, devices = _sampler(tmp_path, best_failures=2)
    with pytest.raises(Fault, match="re-measuring BEST failed.*NRT_FAILURE"):
        sampler.sample(Pending(1, "a" * 40, "edit", "x"), tmp_path / "c", _decided_after(2))
    assert devices.leases == 2


def test_judge_never_charges_a_failed_best_to_the_candidate() -> None:
    ok = Measurement(status=OK, metrics={"mfu": 44.0})
    bad = Measurement.failure(FAILED, "NRT_FAILURE(1)")
    judged = judge([(ok, bad)], Best(40.0), Rule("mfu", "higher", 0.01), deterministic_target=False)
    assert judged.verdict == Verdict.INTERRUPTED and "not the candidate" in judged.error


def test_the_compiler_baseline_is_measured_on_the_baselines_lease_while_it_is_held(
    tmp_path: Path,
) -> None:
    sampler, target, devices = _sampler(tmp_path, best_failures=0)

    def reference(tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        target.references.append({**(env or {}), "held": ",".join(devices.held)})
        return Measurement(status=OK, metrics={"mfu": 30.0})

    target.reference = reference  # type: ignore[method-assign]
    baseline = Pending(0, "b" * 40, Verdict.BASELINE, "baseline")
    samples = sampler.sample(baseline, tmp_path / "best", _decided_after(1))
    assert isinstance(samples, list) and samples[0][0].ok
    assert target.references == [{"CORE": "core0", "held": "core0"}]
    assert devices.leases == 1  # no lease of its own
    assert sampler.reference is not None and sampler.reference.value("mfu") == 30.0
