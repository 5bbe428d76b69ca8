"""``kernelopt ir`` commands through click's runner."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from ir_support import IR_DIR

from kernelopt.ir import ir_for_workload, ir_from_knobs, knobs_to_json, sample
from kernelopt.ir.cli import ir_group
from kernelopt.ir.footprint import fits

MATMUL = IR_DIR / "matmul"
LHS_RHS = IR_DIR / "matmul_lhs_rhs"


def run(*args: str):
    return CliRunner().invoke(ir_group, [str(a) for a in args])


@pytest.mark.parametrize("command", ["show", "validate", "render", "sample", "init"])
def test_every_command_has_help_with_an_example(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.output and f"kernelopt ir {command}" in result.output


def test_show_prints_each_variant() -> None:
    result = run("show", LHS_RHS / "workload.py")
    assert result.exit_code == 0, result.output
    assert "== base" in result.output and "== LoadTranspose" in result.output
    assert "physical_buffers:" in result.output and "psum_lhs_T" in result.output


def test_show_prints_the_workloads_roofline_first(tmp_path: Path) -> None:
    # exp over 256 x 512 bf16: 2 x 262,144 bytes to and from HBM at 368 B/ns = 1.42 us;
    # 131,072 elements on ScalarE alone at 128 x 1.2 GHz = 0.85 us; no matmul.
    path = tmp_path / "exp.py"
    path.write_text(
        "from kernelopt.ir import NKIActivation\n\n"
        "def f_nkigym(x):\n    return NKIActivation(op='exp')(data=x)\n\n"
        "def f_numpy(x):\n    import numpy as np\n    return np.exp(x)\n\n"
        "INPUT_SPECS = {'x': ((256, 512), 'bfloat16')}\n"
    )
    result = run("show", path)
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("roofline on trn2: 1.42 us, hbm-bound")
    assert "tensor 0.00 us, vector/scalar 0.85 us, hbm 1.42 us" in first


def test_validate_accepts_the_shipped_knobs() -> None:
    result = run("validate", MATMUL / "knobs.json", "--workload", MATMUL / "workload.py")
    assert result.exit_code == 0 and "valid" in result.output


def test_validate_exits_1_with_fix_hints(tmp_path: Path) -> None:
    knobs = json.loads((MATMUL / "knobs.json").read_text())
    knobs["ltiles_per_block"]["d0"] = 5
    knobs["buffer_scopes"]["psum_out"]["d0"] = "PER_TILE"
    path = tmp_path / "knobs.json"
    path.write_text(json.dumps(knobs))
    result = run("validate", path, "-w", MATMUL / "workload.py")
    assert result.exit_code == 1
    assert (
        "ltiles_per_block(d0)" in result.output
        and "fix: set ltiles_per_block['d0'] = 4" in result.output
    )
    as_json = run("validate", path, "-w", MATMUL / "workload.py", "--json")
    report = json.loads(as_json.output)
    assert as_json.exit_code == 1 and report["valid"] is False
    assert {f["check"] for f in report["failures"]} == {"ltiles_per_block"}


def test_validate_reports_unknown_names_as_errors(tmp_path: Path) -> None:
    path = tmp_path / "knobs.json"
    path.write_text(json.dumps({"buffer_scopes": {"sbuf_x": {"d0": "FULL"}}}))
    result = run("validate", path, "-w", MATMUL / "workload.py")
    assert result.exit_code != 0 and "buffer_scopes.sbuf_x: unknown buffer" in result.output


def test_render_prints_the_shipped_kernel() -> None:
    result = run("render", MATMUL / "knobs.json", "-w", MATMUL / "workload.py")
    assert result.exit_code == 0
    assert result.output == (MATMUL / "kernel.py").read_text()


def test_render_prints_the_beta1_kernel_of_the_same_knobs() -> None:
    result = run("render", MATMUL / "knobs.json", "-w", MATMUL / "workload.py", "--api", "beta1")
    assert result.exit_code == 0
    assert "from neuronxcc import nki" in result.output
    assert "\nimport nki\n" not in result.output
    loops = "_range("
    assert result.output.count(loops) == (MATMUL / "kernel.py").read_text().count(loops)


def test_render_refuses_an_invalid_state(tmp_path: Path) -> None:
    path = tmp_path / "knobs.json"
    path.write_text(json.dumps({"loop_order": ["d0.tile", "d0.block"]}))
    result = run("render", path, "-w", MATMUL / "workload.py")
    assert result.exit_code == 1 and "loop_order(loop_order)" in result.output


def test_sample_json_is_seeded_and_alternates_variants() -> None:
    first = run("sample", LHS_RHS / "workload.py", "-n", "4", "--seed", "3", "--json")
    again = run("sample", LHS_RHS / "workload.py", "-n", "4", "--seed", "3", "--json")
    assert first.exit_code == 0 and first.output == again.output
    states = [json.loads(line) for line in first.output.splitlines()]
    assert [s["variant"] for s in states] == ["base", "LoadTranspose"] * 2
    other = run("sample", LHS_RHS / "workload.py", "-n", "4", "--seed", "4", "--json")
    assert other.output != first.output


def test_sample_draws_only_states_that_fit_on_chip() -> None:
    # At its full size a joint draw of this norm + matmul often asks for more SBUF than
    # there is (e.g. x held whole next to its transpose): such draws are redrawn.
    workload = Path(__file__).resolve().parent / "llm_workloads" / "rmsnorm_slow.py"
    base = ir_for_workload(workload)
    rng = random.Random(11)
    assert not all(fits(sample(base, rng)) for _ in range(8))  # the raw draws do not
    result = run("sample", workload, "-n", "8", "--seed", "11", "--json")
    assert result.exit_code == 0, result.output
    states = [ir_from_knobs(workload, json.loads(line)) for line in result.output.splitlines()]
    assert len(states) == 8 and all(fits(s) for s in states)


def test_missing_workload_file_is_a_usage_error(tmp_path: Path) -> None:
    result = run("show", tmp_path / "nope.py")
    assert result.exit_code == 2 and "does not exist" in result.output


def test_init_writes_the_best_screened_state_beside_the_workload(tmp_path: Path) -> None:
    from kernelopt.ir.start import SimTimer
    from kernelopt.workload import load_workload

    folder = tmp_path / "softmax"
    folder.mkdir()
    source = (IR_DIR / "softmax" / "workload.py").read_text()
    (folder / "workload.py").write_text(source.replace("M, N = 1024, 2048", "M, N = 256, 1024"))
    result = run("init", folder / "workload.py", "--pool", "6", "--json")
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["knobs"] == str(folder / "knobs.json") and record["screened"] == 6
    # Six slots, plus every variant's defaults and templates: more states than slots.
    assert record["timed"] > 6
    rendered = run("render", folder / "knobs.json", "-w", folder / "workload.py")
    assert rendered.exit_code == 0 and rendered.output == (folder / "kernel.py").read_text()
    # The pool holds the default knobs: the pick is never slower than they are.
    workload = load_workload(folder / "workload.py")
    timer = SimTimer(workload)
    default = timer(ir_for_workload(workload))
    assert default is not None and record["estimate_us"] <= default * 1e6 + 1e-6
    again = run("init", folder / "workload.py")
    assert again.exit_code != 0 and "--force" in again.output
    forced = run("init", folder / "workload.py", "--pool", "0", "--force")
    assert forced.exit_code == 0 and "the default knobs" in forced.output
    knobs = json.loads((folder / "knobs.json").read_text())
    assert knobs == knobs_to_json(ir_for_workload(workload))


def test_the_ir_commands_need_no_oracle_and_checking_names_it(tmp_path: Path) -> None:
    # A workload written as the example is, f_nkigym and INPUT_SPECS only:
    # `ir show` refused it for the missing f_numpy, which only checking reads.
    workload = tmp_path / "rms_mm.py"
    workload.write_text(
        "from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, "
        "NKITensorScalar, NKITranspose\n\n"
        "def f_nkigym(x, w):\n"
        "    ss = NKITensorReduce(op='add', axis=1)(data=NKIActivation(op='square')(data=x))\n"
        "    rs = NKIActivation(op='rsqrt', scale=1 / 256, bias=1e-6)(data=ss)\n"
        "    xn = NKITensorScalar(op0='multiply', operand0=rs)(data=x)\n"
        "    return NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)\n\n"
        "INPUT_SPECS = {'x': ((256, 256), 'bfloat16'), 'w': ((256, 128), 'bfloat16')}\n"
    )
    assert run("show", workload).exit_code == 0
    drawn = run("sample", workload, "-n", "1", "--json")
    assert drawn.exit_code == 0, drawn.output
    knobs = tmp_path / "knobs.json"
    knobs.write_text(drawn.output.splitlines()[0])
    assert run("validate", knobs, "--workload", workload).exit_code == 0
    rendered = run("render", knobs, "--workload", workload)
    assert rendered.exit_code == 0 and "nisa.nc_matmul" in rendered.output
    refused = run("init", workload, "--pool", "0")
    assert refused.exit_code == 1
    assert "missing required names: f_numpy; f_numpy is the oracle" in refused.output
