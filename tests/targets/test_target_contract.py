"""One contract for every Target: a benchmark command, an NKI kernel on sim, and on Trn2.

What the loop relies on, whatever measures: a good tree gives an ``ok``
Measurement carrying the program's metric; a tree that crashes is ``failed``
and one with wrong numbers ``incorrect``, as data, never an exception; the
spec rebuilds an equal target (that is how a host measures it); the reference
hook answers with a Measurement or None. Trn2 runs against the fake
toolchain at the process boundary; the target, gate and driver are real.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelopt.devices.neuron import NeuronGate
from kernelopt.hosts import LocalHost
from kernelopt.measurement import FAILED, INCORRECT, OK, TIMEOUT, Measurement
from kernelopt.neuron.target import NeuronTarget
from kernelopt.program import NeuronConfig
from kernelopt.targets import LocalCommand
from kernelopt.targets.base import Target, target_from_spec
from kernelopt.targets.command import CommandTarget, ResultsSpec
from kernelopt.targets.nki import NkiSimTarget
from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"
GOOD = (KERNELS / "kernel.py").read_text()
# Reads the first 128 rows of rhs on every step: runs fine, wrong numbers.
WRONG = GOOD.replace("rhs[k * 128 : (k + 1) * 128, 0:512]", "rhs[0:128, 0:512]")
CRASH = GOOD.replace("K, M = lhsT.shape", "K, M = lhsT.shape\n    raise RuntimeError('boom')")


@dataclass
class Case:
    target: Target
    metric: str
    trees: dict[str, Path]  # good, crash, wrong


def _kernel_tree(root: Path, name: str, source: str) -> Path:
    folder = root / name / "ir" / "small"
    folder.mkdir(parents=True)
    shutil.copy(KERNELS / "workload.py", folder / "workload.py")
    (folder / "kernel.py").write_text(source)
    return root / name


def command_case(tmp: Path) -> Case:
    target = LocalCommand(
        CommandTarget(
            command="sh bench.sh",
            metric="time",
            better="lower",
            results=ResultsSpec("stdout"),
            correct="err == 0",
            timeout_s=20,
        )
    )
    scripts = {
        "good": "echo time: 5\necho err: 0\n",
        "crash": "echo the kernel crashed >&2\nexit 1\n",
        "wrong": "echo time: 4\necho err: 1\n",
    }
    trees = {}
    for name, script in scripts.items():
        (tmp / name).mkdir()
        (tmp / name / "bench.sh").write_text(script)
        trees[name] = tmp / name
    return Case(target, "time", trees)


def sim_case(tmp: Path) -> Case:
    target = NkiSimTarget(workload="ir/small/workload.py", kernel="ir/small/kernel.py")
    trees = {
        n: _kernel_tree(tmp, n, s) for n, s in (("good", GOOD), ("crash", CRASH), ("wrong", WRONG))
    }
    return Case(target, "mfu", trees)


def neuron_case(tmp: Path) -> Case:
    fake = FakeTrn2(tmp / "fake-trn2").install()
    fake.configure(monitor_period_s=0.1)
    target = NeuronTarget(
        workload="ir/small/workload.py",
        kernel="ir/small/kernel.py",
        hosts=(LocalHost(),),
        gate=NeuronGate(search_path=(str(fake.bin_dir),), timeout=20),
        results_dir=tmp / "results",
        settings=NeuronConfig(activate=str(fake.activate_path), warmup=1, iterations=3),
        python=sys.executable,
        poll_s=0.05,
        max_wait_s=0.0,
        lock_dir=str(tmp / "locks"),
    )
    trees = {
        n: _kernel_tree(tmp, n, s) for n, s in (("good", GOOD), ("crash", CRASH), ("wrong", WRONG))
    }
    return Case(target, "mfu", trees)


CASES = {"command": command_case, "nki-sim": sim_case, "nki-neuron": neuron_case}


@pytest.fixture(params=list(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return CASES[request.param](tmp_path)


def test_a_good_tree_is_ok_and_carries_the_metric(case: Case) -> None:
    m = case.target.measure(case.trees["good"])
    assert m.status == OK, m.error
    value = m.value(case.metric)
    assert value is not None and value > 0
    assert m.deterministic == case.target.deterministic or not m.deterministic


def test_a_crash_is_a_failed_measurement_with_the_cause(case: Case) -> None:
    m = case.target.measure(case.trees["crash"])
    assert m.status in (FAILED, TIMEOUT) and m.error
    assert m.value(case.metric) is None
    assert "crash" in (m.error + m.log_tail) or "boom" in (m.error + m.log_tail)


def test_wrong_numbers_are_incorrect_never_ok(case: Case) -> None:
    m = case.target.measure(case.trees["wrong"])
    assert m.status == INCORRECT, (m.status, m.error)


def test_the_spec_rebuilds_an_equal_target(case: Case) -> None:
    spec = case.target.spec()
    assert spec["kind"] == type(case.target).kind
    assert json.loads(json.dumps(spec)) == spec
    rebuilt = target_from_spec(spec)
    assert type(rebuilt) is type(case.target) and rebuilt.spec() == spec


def test_the_reference_hook_answers_with_a_measurement_or_none(case: Case) -> None:
    answer = case.target.reference(case.trees["good"])
    assert answer is None or isinstance(answer, Measurement)
    if isinstance(answer, Measurement) and not answer.ok:
        assert answer.error, "a reference that could not be measured says why"


def test_device_and_determinism_are_declared(case: Case) -> None:
    assert isinstance(case.target.device, str) and case.target.device
    assert isinstance(case.target.deterministic, bool)


def test_an_unknown_spec_kind_is_named() -> None:
    with pytest.raises(ValueError, match="unknown target kind in spec: 'gpu'"):
        target_from_spec({"kind": "gpu"})
