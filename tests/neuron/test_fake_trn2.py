"""The fake toolchain: documented output shapes, and inactive unless enabled."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelopt.devices.neuron import parse_neuron_ls, parse_neuron_monitor
from kernelopt.neuron.cli import fake_trn2_group
from kernelopt.testing.fake_trn2 import PYLIB, FakeTrn2

KERNELS = Path(__file__).resolve().parent / "kernels"


def _run(
    fake: FakeTrn2, *argv: str, extra: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **fake.env(), **(extra or {})}
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=60, cwd=cwd)


def test_nothing_fake_is_importable_or_on_path_without_enabling_it() -> None:
    assert str(PYLIB) not in sys.path
    for name in ("nrtpy", "neuronxcc"):
        assert importlib.util.find_spec(name) is None
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [sys.executable, "-c", "import nrtpy"], env=clean, capture_output=True, text=True
    )
    assert probe.returncode != 0


def test_env_prints_export_lines_that_enable_the_tools_in_a_shell(tmp_path: Path) -> None:
    home = tmp_path / "trn2"
    result = CliRunner().invoke(fake_trn2_group, ["env", "--home", str(home)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("export PATH=")
    script = f'eval "$FAKE_ENV"; neuron-ls -j; {sys.executable} -c "import nrtpy"'
    shell = subprocess.run(
        ["sh", "-c", script],
        env={**os.environ, "FAKE_ENV": result.output},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shell.returncode == 0, shell.stderr
    devices = parse_neuron_ls(shell.stdout, command="neuron-ls -j", host="local")
    assert [d["neuron_device"] for d in devices] == [0, 1]
    assert (home / "activate").read_text() == result.output


def test_set_and_show_change_the_fakes_settings(tmp_path: Path) -> None:
    home = str(tmp_path / "trn2")
    runner = CliRunner()
    result = runner.invoke(
        fake_trn2_group, ["set", "--home", home, "compile_delay_s=2", 'busy={"0": 77}']
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(runner.invoke(fake_trn2_group, ["show", "--home", home]).output)
    assert shown["compile_delay_s"] == 2 and shown["busy"] == {"0": 77}
    bad = runner.invoke(fake_trn2_group, ["set", "--home", home, "colour=blue"])
    assert bad.exit_code != 0 and "unknown fake Trn2 settings ['colour']" in bad.output
    assert runner.invoke(fake_trn2_group, ["set", "--home", home, "oops"]).exit_code != 0


def test_neuron_ls_new_format_wraps_the_list_and_old_format_refuses_the_new_flag(
    fake: FakeTrn2,
) -> None:
    new = _run(fake, "neuron-ls", "--output-format", "json")
    doc = json.loads(new.stdout)
    assert isinstance(doc, dict) and doc["instance_type"] == "trn2.48xlarge"
    assert parse_neuron_ls(new.stdout, command="neuron-ls", host="h")[1]["neuroncore_ids"] == list(
        range(8, 16)
    )
    fake.configure(neuron_ls_format="old")
    assert _run(fake, "neuron-ls", "--output-format", "json").returncode != 0
    assert isinstance(json.loads(_run(fake, "neuron-ls", "--json-output").stdout), list)


def test_neuron_monitor_streams_documents_the_gate_can_read(fake: FakeTrn2) -> None:
    fake.configure(busy={"1": 4242}, monitor_period_s=0.05)
    env = {**os.environ, **fake.env()}
    process = subprocess.Popen(["neuron-monitor"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first, second = process.stdout.readline(), process.stdout.readline()
    finally:
        process.kill()
        process.wait()
    usage = parse_neuron_monitor(first, host="h")
    assert usage[8] == 87.5 and 0 not in usage
    assert json.loads(second)["neuron_hardware_info"]["neuron_device_type"] == "trainium2"


def _compile(
    fake: FakeTrn2, out: Path, kernel: str = "kernel.py"
) -> subprocess.CompletedProcess[str]:
    description = {
        "kernel": str(KERNELS / kernel),
        "func": None,
        "inputs": {"lhsT": [[256, 128], "bfloat16"], "rhs": [[256, 512], "bfloat16"]},
    }
    source = out / "k.json"
    source.write_text(json.dumps(description))
    return _run(
        fake,
        "neuronx-cc",
        "compile",
        str(source),
        "--target",
        "trn2",
        "--output",
        str(out / "k.neff"),
        cwd=out,
    )


def test_profile_view_prints_one_key_with_fractions_and_unavailable_fields(
    fake: FakeTrn2, tmp_path: Path
) -> None:
    assert _compile(fake, tmp_path).returncode == 0
    neff, ntff = str(tmp_path / "k.neff"), str(tmp_path / "k.ntff")
    unbound = _run(fake, "neuron-profile", "capture", "-n", neff, "-s", ntff)
    assert unbound.returncode != 0 and "no NeuronCore visible" in unbound.stderr
    bound = {"NEURON_RT_VISIBLE_CORES": "0"}
    assert (
        _run(fake, "neuron-profile", "capture", "-n", neff, "-s", ntff, extra=bound).returncode == 0
    )
    view = _run(
        fake, "neuron-profile", "view", "-n", neff, "-s", ntff, "--output-format", "summary-json"
    )
    doc = json.loads(view.stdout)
    (key,) = doc
    flat = doc[key]
    assert key == "k"
    percents = [v for k, v in flat.items() if k.endswith("_percent") and v != -1]
    assert percents and all(0 <= v <= 1 for v in percents)
    assert flat["spill_save_bytes"] == -1 and flat["hfu_estimated_percent"] == -1
    assert "mac_count" not in flat and flat["total_time"] > 0


@pytest.mark.parametrize(
    ("kernel", "settings", "message"),
    [
        ("kernel_psum_oom.py", {}, "[NCC_EOOM001]"),
        ("kernel.py", {"compile_error": "Internal tensorizer error"}, "Internal tensorizer error"),
    ],
)
def test_neuronx_cc_fails_like_the_real_compiler(
    fake: FakeTrn2, tmp_path: Path, kernel: str, settings: dict[str, str], message: str
) -> None:
    fake.configure(**settings)
    result = _compile(fake, tmp_path, kernel)
    assert result.returncode == 1 and message in result.stderr
    assert not (tmp_path / "k.neff").exists()
    # Like the real compiler, it keeps its log in the working directory.
    assert message in (tmp_path / "log-neuron-cc.txt").read_text()
