"""The program's compiler options reach the sim target's cost model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelopt.program import load_program
from kernelopt.remote import target_from_spec
from kernelopt.sim.cli import sim_command
from kernelopt.targets.nki import NkiSimTarget

LATE_THEN_EARLY = Path(__file__).parent / "kernels" / "late_then_early.py"

WORKLOAD = """
INPUT_SPECS = {"big": ((128, 8192), "float32"), "small": ((128, 512), "float32")}


def f_numpy(big, small):
    return big, small * 0 + 1
"""

PROGRAM = """---
name: late
target: {{kind: nki, workload: ir/late/workload.py, kernel: ir/late/kernel.py}}
metric: {{name: mfu, better: higher}}
device: {{kind: sim, neuron: {{compiler_args: {args}}}}}
---
Tune it.
"""


def _target(root: Path, args: list[str]) -> NkiSimTarget:
    (root / "ir" / "late").mkdir(parents=True, exist_ok=True)
    (root / "ir" / "late" / "kernel.py").write_text(LATE_THEN_EARLY.read_text())
    (root / "ir" / "late" / "workload.py").write_text(WORKLOAD)
    (root / "programs").mkdir(exist_ok=True)
    path = root / "programs" / "late.md"
    path.write_text(PROGRAM.format(args=json.dumps(args)))
    return NkiSimTarget.from_program(load_program(path, root), root)


@pytest.mark.parametrize("args", [[], ["--enable-instruction-scheduling=false"]])
def test_compiler_args_travel_from_the_program_through_the_spec(tmp_path, args):
    target = _target(tmp_path, args)
    assert target.compiler_args == tuple(args)
    assert target.spec()["compiler_args"] == args
    rebuilt = target_from_spec(json.loads(json.dumps(target.spec())))
    assert rebuilt.compiler_args == tuple(args)


def test_the_scheduler_option_changes_the_measured_time(tmp_path):
    default = _target(tmp_path / "a", []).measure(tmp_path / "a", env={})
    off = _target(tmp_path / "b", ["enable-instruction-scheduling=false"])
    in_order = off.measure(tmp_path / "b", env={})
    assert default.status == in_order.status == "ok"
    assert in_order.metrics["time"] > default.metrics["time"]
    # The measurement carries the explanation an agent reads next.
    assert in_order.extra["explain"]["bound"]
    # ... without the per-line spans, which grow with the kernel (the CLI prints them).
    assert "by_line" not in in_order.extra["explain"] and in_order.extra["explain"]["stalls"]


def test_sim_cli_passes_compiler_options(tmp_path):
    path = LATE_THEN_EARLY
    workload = tmp_path / "w.py"
    workload.write_text(WORKLOAD)

    def total(*args: str) -> float:
        out = CliRunner().invoke(
            sim_command, [str(path), "--workload", str(workload), "--json", *args]
        )
        assert out.exit_code == 0, out.output
        return json.loads(out.output)["total_time"]

    assert total("--compiler-arg", "enable-instruction-scheduling=false") > total()
