"""The `sim` command: exit codes, readable output and the JSON record."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from kernelopt.sim.cli import sim_command

HERE = Path(__file__).parent
KERNELS = HERE / "kernels"
WORKLOAD = str(HERE / "workload_matmul.py")


def _invoke(*args: str):
    return CliRunner().invoke(sim_command, list(args))


def test_correct_kernel_exits_0_with_a_labelled_table():
    result = _invoke(str(KERNELS / "matmul_basic.py"), "--workload", WORKLOAD)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("sim: ")
    assert "correct" in result.output.splitlines()[0]
    lines = dict(line.split(":", 1) for line in result.output.splitlines()[1:])
    assert lines["device"].strip() == "sim"
    assert float(lines["mfu_estimated_percent"]) > 0
    assert lines["correct"].strip() == "True"


def test_json_record_carries_profile_and_verdict():
    result = _invoke(str(KERNELS / "matmul_basic.py"), "--workload", WORKLOAD, "--json")
    assert result.exit_code == 0
    record = json.loads(result.output)
    assert record["correct"] is True and record["device"] == "sim"
    assert record["instance_type"] == "sim-trn2"
    assert 0 < record["max_abs_error"] < 1e-4
    assert record["matmul_instruction_count"] == 8 and record["total_time"] > 0


def test_wrong_numerics_exit_1():
    result = _invoke(str(KERNELS / "matmul_wrong_k.py"), "--workload", WORKLOAD, "--json")
    assert result.exit_code == 1
    record = json.loads(result.output)
    assert record["correct"] is False and record["error_kind"] == "numerics"


def test_native_precision_option_reaches_the_check():
    result = _invoke(
        str(KERNELS / "matmul_basic.py"), "--workload", WORKLOAD, "--precision", "native", "--json"
    )
    assert json.loads(result.output)["precision"] == "native"


def test_func_option_selects_the_kernel(tmp_path):
    workload = tmp_path / "w.py"
    workload.write_text(
        "INPUT_SPECS = {'x': ((128, 16), 'float32')}\ndef f_numpy(x):\n    return x * 2 - 3\n"
    )
    args = [str(KERNELS / "elementwise.py"), "--workload", str(workload)]
    assert _invoke(*args).exit_code == 1  # two @nki.jit functions: ambiguous
    result = _invoke(*args, "--func", "scale_shift")
    assert result.exit_code == 0, result.output


def test_usage_errors_exit_2(tmp_path):
    kernel = str(KERNELS / "matmul_basic.py")
    assert _invoke(kernel).exit_code == 2  # --workload missing
    assert _invoke(kernel, "--workload", WORKLOAD, "--precision", "fp8").exit_code == 2
    assert _invoke(str(tmp_path / "nope.py"), "--workload", WORKLOAD).exit_code == 2
    bad = tmp_path / "bad_workload.py"
    bad.write_text("X = 1\n")
    result = _invoke(kernel, "--workload", str(bad))
    assert result.exit_code == 2 and "missing required names: f_numpy, INPUT_SPECS" in result.output


def test_help_has_an_example():
    result = _invoke("--help")
    assert result.exit_code == 0
    assert "Example:" in result.output and "kernelopt sim" in result.output
