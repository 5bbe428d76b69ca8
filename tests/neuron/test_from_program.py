"""NeuronTarget.from_program: the program's device keys reach the target."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelopt.devices.neuron import NeuronGate
from kernelopt.hosts import LocalHost
from kernelopt.neuron.target import NeuronTarget
from kernelopt.program import load_program

KERNELS = Path(__file__).resolve().parent / "kernels"

PROGRAM = """---
name: small
target:
  kind: nki
  workload: ir/small/workload.py
  kernel: ir/small/kernel.py
metric: {name: mfu, better: higher}
device:
  kind: neuron
  hosts: [localhost]
  poll: 30s
  max_wait: 5m
  python: /opt/venv/bin/python
  neuron:
    activate: ~/venvs/kernel-env/bin/activate
    compiler_args: ["--internal-max-instruction-limit=1000000"]
    pipeline_options: [enable-linear-scan-allocation=false, enable-instruction-scheduling=false]
    runtime_activate: ~/venvs/nrtpy/bin/activate
    runtime_python: /opt/nrtpy/bin/python
    tolerance: 0.02
    lnc: 2
    opt: 3
    compile_timeout: 90s
    compile_workers: 4
    %s
---
Tune the small matmul.
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    folder = tmp_path / "ir" / "small"
    folder.mkdir(parents=True)
    shutil.copy(KERNELS / "workload.py", folder / "workload.py")
    shutil.copy(KERNELS / "kernel.py", folder / "kernel.py")
    return tmp_path


def test_device_keys_reach_the_target(repo: Path) -> None:
    path = repo / "small.md"
    path.write_text(PROGRAM % "")
    program = load_program(path, root=repo)
    target = NeuronTarget.from_program(program, repo, [LocalHost()], NeuronGate(), run="small-t1")

    assert target.device == "neuron" and target.deterministic is False
    assert target.results_dir == repo / ".git" / "kernelopt" / "results" / "small-t1"
    assert (target.poll_s, target.max_wait_s) == (30.0, 300.0)
    assert target.python == "/opt/venv/bin/python"
    s = target.settings
    assert (s.lnc, s.opt, s.compile_timeout_s, s.compile_workers) == (2, 3, 90.0, 4)
    assert s.compiler_args == ("--internal-max-instruction-limit=1000000",)
    assert s.pipeline_options == (
        "enable-linear-scan-allocation=false",
        "enable-instruction-scheduling=false",
    )
    assert (s.runtime_activate, s.runtime_python) == (
        "~/venvs/nrtpy/bin/activate",
        "/opt/nrtpy/bin/python",
    )
    assert s.tolerance == 0.02
    # The CPU check before compiling uses the program's correctness gate, as on sim.
    assert (target.seeds, target.atol, target.rtol) == ((0, 1, 2), 5e-3, 5e-3)
    assert s.activate == "~/venvs/kernel-env/bin/activate"


def test_a_relative_results_folder_is_under_the_repository(repo: Path) -> None:
    path = repo / "small.md"
    path.write_text(PROGRAM % "results: artifacts/trn2")
    program = load_program(path, root=repo)
    target = NeuronTarget.from_program(program, repo, [LocalHost()], NeuronGate())
    assert target.results_dir == repo / "artifacts" / "trn2" / "small"


def test_no_host_is_a_clear_error(repo: Path) -> None:
    path = repo / "small.md"
    path.write_text(PROGRAM % "")
    program = load_program(path, root=repo)
    with pytest.raises(ValueError, match="device.hosts names no host"):
        NeuronTarget.from_program(program, repo, [], NeuronGate())
