"""The host-side driver and steps on their own: one record per call, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelopt.neuron.remote import driver_line
from kernelopt.neuron.steps import StepError, jit_function_name
from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parent / "kernels"


def _driver(
    fake: FakeTrn2, *args: str, extra: dict[str, str] | None = None, runtime: bool = False
) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "NEURON_RT_VISIBLE_CORES"}
    env.update(fake.env(runtime=runtime))
    env.update(extra or {})
    result = subprocess.run(
        [sys.executable, "-m", "kernelopt.neuron.driver", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.strip().splitlines()
    return json.loads(line)


def test_measure_without_a_leased_core_is_a_failed_record(fake: FakeTrn2, tmp_path: Path) -> None:
    record = _driver(
        fake,
        "measure",
        "--workload",
        str(KERNELS / "workload.py"),
        "--out",
        str(tmp_path),
        runtime=True,
    )
    assert record["status"] == "failed" and "NEURON_RT_VISIBLE_CORES is not set" in record["error"]


def test_measure_before_compile_names_the_missing_neff(fake: FakeTrn2, tmp_path: Path) -> None:
    record = _driver(
        fake,
        "measure",
        "--workload",
        str(KERNELS / "workload.py"),
        "--out",
        str(tmp_path),
        extra={"NEURON_RT_VISIBLE_CORES": "3"},
        runtime=True,
    )
    assert record["status"] == "failed" and "no NEFF" in record["error"]


def test_compile_without_the_sdk_says_to_source_the_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelopt.neuron.driver",
            "compile",
            "--api",
            "nki.compiler",
            "--kernel",
            str(KERNELS / "kernel.py"),
            "--workload",
            str(KERNELS / "workload.py"),
            "--out",
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    record = json.loads(result.stdout)
    assert record["status"] == "failed"
    assert "device.neuron.activate" in record["error"] or "importing it failed" in record["error"]


def test_the_jit_function_is_found_or_the_choice_is_asked_for(tmp_path: Path) -> None:
    assert jit_function_name(KERNELS / "kernel.py", None) == "small_matmul"
    assert jit_function_name(KERNELS / "kernel.py", "other") == "other"
    two = tmp_path / "two.py"
    two.write_text("import nki\n@nki.jit\ndef a(x):\n    pass\n@nki.jit()\ndef b(x):\n    pass\n")
    with pytest.raises(StepError, match=r"found: a, b.*target.func"):
        jit_function_name(two, None)


def test_every_value_in_the_driver_line_is_quoted() -> None:
    line = driver_line(
        ["compile", "--kernel", "/t/a b;rm -rf ~/x"],
        python="/opt/py thon",
        activate="~/venvs/kernel env/bin/activate",
        env={"NEURON_RT_VISIBLE_CORES": "0,1"},
    )
    assert "'/t/a b;rm -rf ~/x'" in line
    assert "'/opt/py thon'" in line
    assert ". \"$HOME\"/'venvs/kernel env/bin/activate' && " in line
    assert "NEURON_RT_VISIBLE_CORES=0,1" in line


def test_a_neff_for_another_lnc_is_a_runtime_error(fake: FakeTrn2, tmp_path: Path) -> None:
    workload, out = str(KERNELS / "workload.py"), str(tmp_path)
    compiled = _driver(
        fake,
        "compile",
        "--api",
        "nki.compiler",
        "--kernel",
        str(KERNELS / "kernel.py"),
        "--workload",
        workload,
        "--out",
        out,
        "--lnc",
        "2",
    )
    assert compiled["status"] == "ok", compiled
    record = _driver(
        fake,
        "measure",
        "--workload",
        workload,
        "--out",
        out,
        "--lnc",
        "1",
        "--profiler",
        "neuron-explorer",
        extra={"NEURON_RT_VISIBLE_CORES": "0"},
        runtime=True,
    )
    assert record["status"] == "failed"
    assert "compiled for LNC=2 but the runtime runs at LNC=1" in record["error"]
    assert record["timing"] == "device" and record["peak_flops"] == 78.64e12


@pytest.mark.parametrize("sdk", ["2.32", "2.30", "2.27"])
def test_probe_reports_what_each_environment_has_and_the_call_shapes(
    fake: FakeTrn2, sdk: str
) -> None:
    fake.install(sdk=sdk)
    compiling, running = _driver(fake, "probe"), _driver(fake, "probe", runtime=True)
    assert compiling["status"] == running["status"] == "ok"
    api = "nki.compiler.driver" if sdk != "2.27" else "neuronxcc.nki_standalone"
    assert compiling["modules"][api]["ok"] and compiling["modules"][api]["version"]
    assert compiling["modules"]["nkipy.core.compile"]["ok"]
    assert running["modules"]["nrtpy"]["ok"] == (sdk == "2.32")
    profiler = "neuron-explorer"
    assert running["tools"][profiler]["path"] and running["tools"][profiler]["version"]
    assert bool(running["tools"]["neuron-profile"]["path"]) == (sdk == "2.27")
    shapes = compiling["modules"][api]["shapes"]
    if sdk == "2.32":
        # The current driver: five positionals, no input_output_aliases.
        assert shapes["compile_bir_to_neff"] == [
            "compile_opts",
            "bir",
            "input_arrays",
            "argument_names",
            "output_arg_names",
        ]
        assert running["modules"]["nrtpy"]["shapes"]["NrtpyModel.benchmark"]
        # Two environments: no nrtpy where nki is, no NKI compiler where nrtpy is.
        assert not compiling["modules"]["nrtpy"]["ok"]
        assert not running["modules"]["nki.compiler.driver"]["ok"]
    elif sdk == "2.30":
        assert "input_output_aliases" in shapes["compile_bir_to_neff"]
        assert "No module named 'nrtpy'" in running["modules"]["nrtpy"]["error"]
    else:
        assert "kernel_outputs" in shapes["compile_nki_ir_kernel_to_neff"]
