"""Chips as parameter sets: trn2 (the default) and trn1, through the API, the CLI and a program."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from kernelopt.sim import DEFAULT_PARAMS, run_kernel
from kernelopt.sim.chips import CHIPS, TRN1_PARAMS, chip_params
from kernelopt.sim.cli import sim_command
from kernelopt.targets.nki import NkiSimTarget

HERE = Path(__file__).parent
KERNELS = HERE / "kernels"
WORKLOAD = str(HERE / "workload_matmul.py")


def test_trn2_stays_the_default_and_trn1_differs_where_the_record_says() -> None:
    assert chip_params("trn2") is DEFAULT_PARAMS and DEFAULT_PARAMS.name == "trn2"
    trn1 = chip_params("trn1")
    assert trn1.name == "trn1"
    # The NKI Trainium arch guide: 820 GB/s per two-core device, TensorE 2.8 GHz
    # ("92 TFLOPS" bf16, "23" fp32), VectorE 1.12 GHz, ScalarE and GpSimd 1.4 GHz.
    assert trn1.hbm_bytes_per_s == pytest.approx(410e9)
    assert trn1.tensor_peak_flops == pytest.approx(91.75e12, rel=1e-3)
    assert trn1.tensor_peak_flops_fp32 == pytest.approx(22.94e12, rel=1e-3)
    assert (trn1.vector_clock_hz, trn1.scalar_clock_hz, trn1.gpsimd_clock_hz) == (
        1.12e9,
        1.4e9,
        1.4e9,
    )
    assert trn1.tensor_throttle_factor == 1.0  # the warm-up throttle is a v3 feature
    assert trn1.dma_hwdge_fixed_ns == trn1.dma_fixed_ns  # no hardware DGE on v2
    assert DEFAULT_PARAMS.tensor_peak_flops == pytest.approx(78.64e12, rel=1e-4)
    with pytest.raises(ValueError, match="trn1, trn2|trn2, trn1"):
        chip_params("trn3")


def test_peak_rates_are_fields_a_roofline_can_read_per_chip() -> None:
    for params in CHIPS.values():
        assert params.vector_elements_per_s == params.vector_clock_hz * 128
        assert params.scalar_elements_per_s == params.scalar_clock_hz * 128
        assert params.hbm_bytes_per_s == params.hbm_bytes_per_ns * 1e9


def test_a_compute_bound_kernel_runs_at_each_chips_tensor_rate() -> None:
    n = 1024
    inputs = {"lhsT": np.zeros((n, n), np.float32), "rhs": np.zeros((n, n), np.float32)}
    times = {}
    for chip, params in CHIPS.items():
        # Without the Trn2 warm-up throttle the TensorE busy time is the rate alone.
        flat = dataclasses.replace(params, tensor_throttle_factor=1.0)
        run = run_kernel(KERNELS / "matmul_basic.py", inputs, compute=False, params=flat)
        assert run.profile["instance_type"] == f"sim-{chip}"
        times[chip] = run.profile["tensor_engine_active_time"]
    # Columns per second sustained: the clock times the columns streamed per cycle
    # (trn1's 2.8 GHz at 512 columns per ~596 cycles, the trn1 tutorial's rate).
    rate = {
        chip: p.tensor_clock_hz * p.tensor_columns_per_cycle
        for chip, p in (("trn1", TRN1_PARAMS), ("trn2", DEFAULT_PARAMS))
    }
    assert times["trn2"] / times["trn1"] == pytest.approx(rate["trn1"] / rate["trn2"], rel=1e-6)
    assert TRN1_PARAMS.tensor_columns_per_cycle < 0.9 < DEFAULT_PARAMS.tensor_columns_per_cycle


def test_cli_chip_option_names_the_chip() -> None:
    runner = CliRunner()
    out = runner.invoke(
        sim_command, [str(KERNELS / "matmul_basic.py"), "--workload", WORKLOAD, "--chip", "trn1"]
    )
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0].endswith("on trn1")
    record = json.loads(
        runner.invoke(
            sim_command,
            [str(KERNELS / "matmul_basic.py"), "--workload", WORKLOAD, "--chip", "trn1", "--json"],
        ).output
    )
    assert record["chip"] == "trn1" and record["instance_type"] == "sim-trn1"
    bad = runner.invoke(
        sim_command, [str(KERNELS / "matmul_basic.py"), "--workload", WORKLOAD, "--chip", "trn9"]
    )
    assert bad.exit_code == 2 and "trn9" in bad.output


def test_the_sim_target_carries_the_program_chip() -> None:
    target = NkiSimTarget(workload="w.py", kernel="k.py", chip="trn1")
    again = NkiSimTarget.from_spec(target.spec())
    assert again.chip == "trn1"
    assert NkiSimTarget.from_spec({**target.spec(), "chip": None}).chip == "trn2"


def test_program_key_device_sim_chip(tmp_path: Path) -> None:
    import yaml

    from kernelopt.program import ProgramError, load_program

    front = {
        "kernelopt": 1,
        "name": "mm",
        "target": {
            "kind": "command",
            "command": "true",
            "results": {"format": "csv", "path": "o.csv"},
        },
        "metric": {"name": "t", "better": "lower"},
        "device": {"kind": "none", "sim": {"chip": "trn1"}},
    }
    path = tmp_path / "programs" / "p.md"
    path.parent.mkdir()
    path.write_text("---\n" + yaml.safe_dump(front) + "---\n# Brief\n")
    assert load_program(path, root=tmp_path).device.sim.chip == "trn1"
    front["device"]["sim"]["chip"] = "trn9"
    path.write_text("---\n" + yaml.safe_dump(front) + "---\n# Brief\n")
    with pytest.raises(ProgramError) as info:
        load_program(path, root=tmp_path)
    assert "device.sim.chip" in {p.path for p in info.value.problems}
