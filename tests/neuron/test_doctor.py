"""`kernelopt doctor` on each fake SDK layout (it names the path) and on broken hosts
(it names the missing piece and the fix, and exits 1 when a required step has no path)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kernelopt.neuron.cli import doctor_command
from kernelopt.testing.fake_trn2 import KERNELOPT_ROOT, FakeTrn2

KERNELS = Path(__file__).resolve().parent / "kernels"


def _doctor(fake: FakeTrn2, *extra: str, runtime: bool = True) -> tuple[int, dict[str, Any]]:
    args = ["--activate", str(fake.activate_path), "--python", sys.executable, "--json"]
    if runtime and fake.runtime_activate_path != fake.activate_path:
        args += ["--runtime-activate", str(fake.runtime_activate_path)]
    env = {"PATH": f"{fake.bin_dir}:{os.environ['PATH']}"}
    result = CliRunner().invoke(doctor_command, [*args, *extra], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.output)


def _steps(report: dict[str, Any], *, kernel: bool = False) -> dict[str, dict[str, Any]]:
    steps = {s["step"]: s for s in report["steps"]}
    order = ["gate", "compile", *(["kernel"] if kernel else []), "run", "time", "profile"]
    assert list(steps) == [*order, "baseline", "check"]
    return steps


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sdk", "path", "compile_entry", "timing"),
    [
        ("2.32", "nrtpy", "compile_bir_to_neff", "benchmark(mode='device')"),
        ("2.30", "capture", "compile_bir_to_neff", "neuron-explorer capture total_time"),
        ("2.27", "capture", "compile_nki_ir_kernel_to_neff", "neuron-explorer capture total_time"),
        ("2.26", "baremetal", "neuronxcc.nki.baremetal", "neuron-profile capture total_time"),
        ("2.22", "baremetal", "neuronxcc.nki.baremetal", "neuron-profile capture total_time"),
    ],
)
def test_each_layout_names_the_path_of_every_step(
    tmp_path: Path, sdk: str, path: str, compile_entry: str, timing: str
) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk=sdk)
    fake.configure(monitor_period_s=0.1)
    code, report = _doctor(fake)
    steps = _steps(report)
    assert report["sdk"]["path"] == path and code == 0, report
    assert compile_entry in steps["compile"]["path"]
    assert timing in steps["time"]["path"]
    assert steps["baseline"]["status"] == "ok" and "compile_to_neff" in steps["baseline"]["has"]
    if path == "baremetal":
        # baremetal returns the device's outputs: checked, and named in the path.
        assert steps["check"]["status"] == "ok" and "baremetal" in steps["check"]["path"]
        assert "nki.benchmark" in steps["time"]["path"]
        baseline = "neuronpy" if sdk == "2.22" else "nkipy"
        assert steps["baseline"]["path"].startswith(baseline)
    elif sdk == "2.32":
        assert all(s["status"] == "ok" for s in steps.values() if s["step"] != "gate"), steps
        assert report["sdk"]["generation"] == ">=2.32"
    else:
        # No nrtpy before 2.32: the outputs a profiler capture saves are checked.
        assert steps["check"]["status"] == "ok" and "--save-output" in steps["check"]["has"]


@pytest.mark.slow
def test_no_nrtpy_on_a_2_32_host_is_named_with_the_fix(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.32")
    fake.configure(monitor_period_s=0.1)
    _, report = _doctor(fake, runtime=False)  # runtime_activate not set: one environment
    run = _steps(report)["run"]
    assert run["status"] == "warn" and "nrtpy" in run["missing"]
    # The headline agrees with the finding: the nki driver has the >= 2.32 shape.
    assert report["sdk"]["generation"] == ">=2.32 (no nrtpy environment configured)"
    assert run["missing"].startswith("nrtpy: this host's nki is SDK >= 2.32")
    assert "device.neuron.runtime_activate" in run["fix"] and "LD_LIBRARY_PATH" in run["fix"]
    # Forcing the nrtpy path on that host leaves run and time without a path: exit 1.
    code, forced = _doctor(fake, "--sdk-path", "nrtpy", runtime=False)
    assert code == 1 and _steps(forced)["run"]["status"] == "missing"
    assert "device.neuron.runtime_activate" in _steps(forced)["run"]["fix"]


@pytest.mark.slow
def test_a_host_lnc_other_than_the_programs_is_named(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.32")
    fake.configure(monitor_period_s=0.1, lnc=2, cores_per_device=4)
    _, report = _doctor(fake, "--lnc", "1")
    gate = _steps(report)["gate"]
    assert gate["status"] in ("warn", "missing") and "LNC=2" in gate["has"] + gate["missing"]
    if gate["status"] == "warn":
        assert "device.neuron.lnc: 2" in gate["fix"]


@pytest.mark.slow
@pytest.mark.process_table_to_itself
def test_a_leftover_compiler_in_the_process_table_fails_the_gate(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.32")
    fake.configure(monitor_period_s=0.1)
    leftover = subprocess.Popen(["bash", "-c", "exec -a neuronx-cc sleep 60"])
    try:
        for _ in range(50):  # until the exec has renamed it
            args = Path(f"/proc/{leftover.pid}/cmdline").read_bytes()
            if args.startswith(b"neuronx-cc"):
                break
            time.sleep(0.05)
        code, report = _doctor(fake)
    finally:
        os.kill(leftover.pid, signal.SIGKILL)
        leftover.wait()
    gate = _steps(report)["gate"]
    assert code == 1 and gate["status"] == "missing"
    assert f"pid {leftover.pid}" in gate["missing"] and str(leftover.pid) in gate["fix"]
    assert "NRT_FAILURE" in gate["fix"]


@pytest.mark.slow
def test_an_environment_without_nki_names_the_missing_compiler(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.32")
    fake.configure(monitor_period_s=0.1)
    bare = tmp_path / "bare-activate"  # kernelopt installed, no Neuron SDK
    bare.write_text(f"export PYTHONPATH={KERNELOPT_ROOT}\nexport PATH={fake.bin_dir}:$PATH\n")
    args = ("--activate", str(bare), "--runtime-activate", str(bare))
    code, report = _doctor(fake, *args, runtime=False)
    steps = _steps(report)
    assert code == 1 and steps["compile"]["status"] == "missing"
    assert "pip install nki" in steps["compile"]["fix"]
    assert report["sdk"]["compile_api"] is None and steps["baseline"]["status"] == "optional"


def test_a_missing_activate_script_is_a_failed_probe_with_the_fix(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.27")
    fake.configure(monitor_period_s=0.1)
    code, report = _doctor(fake, "--activate", str(tmp_path / "nowhere" / "activate"))
    steps = _steps(report)
    assert code == 1 and steps["compile"]["status"] == "missing"
    assert "install kernelopt into each environment" in steps["compile"]["fix"]


def test_the_help_has_an_example() -> None:
    result = CliRunner().invoke(doctor_command, ["--help"])
    assert result.exit_code == 0 and "kernelopt doctor gym-3" in result.output


@pytest.mark.slow
def test_doctor_diagnoses_an_ssh_host(sshd: Any, tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.30")
    fake.configure(monitor_period_s=0.1)
    args = [
        "trn-1",
        "--ssh-config",
        str(sshd.ssh_config),
        "--tools-dir",
        str(fake.bin_dir),
        "--activate",
        str(fake.activate_path),
        "--python",
        sys.executable,
        "--json",
    ]
    result = CliRunner().invoke(doctor_command, args)
    report = json.loads(result.output)
    steps = _steps(report)
    assert report["host"] == "trn-1" and report["sdk"]["path"] == "capture", report
    assert "compile_bir_to_neff" in steps["compile"]["path"]
    assert steps["gate"]["path"] and "2 device(s)" in steps["gate"]["has"]


@pytest.mark.slow
def test_doctor_reads_the_programs_device_settings(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.27")
    fake.configure(monitor_period_s=0.1, lnc=1)  # the host at LNC=1, the program at 2
    small = tmp_path / "ir" / "small"
    small.mkdir(parents=True)
    for name in ("workload.py", "kernel.py"):
        (small / name).write_text((KERNELS / name).read_text())
    program = tmp_path / "trn.md"
    program.write_text(
        "---\nname: trn\n"
        "target: {kind: nki, workload: ir/small/workload.py, kernel: ir/small/kernel.py}\n"
        "metric: {name: mfu, better: higher}\n"
        f"device:\n  kind: neuron\n  hosts: [localhost]\n  python: {sys.executable}\n"
        f"  neuron:\n    activate: {fake.activate_path}\n    lnc: 2\n    sdk_path: capture\n"
        "---\nTune it.\n"
    )
    env = {"PATH": f"{fake.bin_dir}:{os.environ['PATH']}"}
    result = CliRunner().invoke(doctor_command, ["--program", str(program), "--json"], env=env)
    report = json.loads(result.output)
    gate = _steps(report, kernel=True)["gate"]
    assert _steps(report, kernel=True)["kernel"]["path"] == "shipped as written, path capture"
    assert report["sdk"]["path_chosen"] == "forced (device.neuron.sdk_path)"
    assert gate["status"] == "warn" and "device.neuron.lnc is 2" in gate["missing"]
    bad = CliRunner().invoke(doctor_command, ["--program", str(tmp_path / "none.md")])
    assert bad.exit_code != 0 and "no such program file" in bad.output


@pytest.mark.slow
def test_a_2_26_host_has_no_nki_namespace_and_doctor_says_so(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.26")
    fake.configure(monitor_period_s=0.1)
    code, report = _doctor(fake)
    steps = _steps(report)
    assert report["sdk"]["generation"] == "2.22-2.26" and report["sdk"]["path"] == "baremetal"
    assert code == 0 and report["sdk"]["namespaces"] == ["neuronxcc"]
    compile_ = steps["compile"]
    assert compile_["status"] == "warn" and "nki.* namespace" in compile_["missing"]
    assert "beta-1 rendering" in compile_["missing"] and "2.27" in compile_["fix"]
    assert "inside the lease" in compile_["path"]
    assert "neuron-profile capture" in steps["time"]["path"]


@pytest.mark.slow
def test_a_beta1_host_without_a_profiler_names_the_missing_tool(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.26")
    fake.configure(monitor_period_s=0.1)
    (fake.bin_dir / "neuron-profile").unlink()
    code, report = _doctor(fake)
    steps = _steps(report)
    assert code == 1 and steps["time"]["status"] == "missing"
    assert "neuron-profile" in steps["time"]["fix"] and steps["profile"]["status"] == "missing"


@pytest.mark.slow
def test_an_nrtpy_that_cannot_load_libnrt_gets_the_ld_library_path_fix_on_its_line(
    tmp_path: Path,
) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.32")
    fake.configure(monitor_period_s=0.1)
    script = fake.runtime_activate_path
    lines = [x for x in script.read_text().splitlines() if "LD_LIBRARY_PATH" not in x]
    without = tmp_path / "activate-runtime-without-ld"
    without.write_text("\n".join(lines) + "\n")
    code, report = _doctor(fake, "--runtime-activate", str(without), runtime=False)
    run = _steps(report)["run"]
    assert code == 1 and run["status"] == "missing" and "libnrt" in run["missing"]
    assert "export LD_LIBRARY_PATH=/opt/aws/neuron/lib" in run["fix"] and str(without) in run["fix"]
    assert report["sdk"]["generation"].startswith(
        ">=2.32 (nrtpy does not import: ImportError: libnrt"
    )


def _program_repo(tmp_path: Path, fake: FakeTrn2, *, knobs: bool) -> Path:
    """A repository with programs/trn.md: a knob program (kernel = the rendering of its
    knobs) or a hand-written nki.* kernel."""
    from benchmarks_support.gitrepo import git

    from kernelopt.ir import ir_for_workload, knobs_text, render_ir

    root = tmp_path / "repo"
    small = root / "ir" / "small"
    small.mkdir(parents=True)
    (root / "programs").mkdir()
    (small / "workload.py").write_text((KERNELS / "workload.py").read_text())
    if knobs:
        ir = ir_for_workload(small / "workload.py")
        (small / "knobs.json").write_text(knobs_text(ir))
        (small / "kernel.py").write_text(render_ir(ir))
    else:
        (small / "kernel.py").write_text((KERNELS / "kernel.py").read_text())
    knob_line = "\n  knobs: ir/small/knobs.json" if knobs else ""
    (root / "programs" / "trn.md").write_text(
        "---\nname: trn\ntarget:\n  kind: nki\n  workload: ir/small/workload.py\n"
        f"  kernel: ir/small/kernel.py{knob_line}\nmetric: {{name: mfu, better: higher}}\n"
        "device:\n  kind: neuron\n  hosts: [localhost]\n"
        f"  python: {sys.executable}\n  neuron:\n    activate: {fake.activate_path}\n"
        "---\nTune it.\n"
    )
    git(root, "init", "-q")
    return root


@pytest.mark.slow
@pytest.mark.parametrize("knobs", [True, False], ids=["knob-kernel", "hand-written"])
def test_doctor_with_a_program_checks_its_kernels_namespace_against_the_host(
    tmp_path: Path, knobs: bool
) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.26")  # NKI beta 1 only
    fake.configure(monitor_period_s=0.1)
    root = _program_repo(tmp_path, fake, knobs=knobs)
    env = {"PATH": f"{fake.bin_dir}:{os.environ['PATH']}"}
    args = ["--program", str(root / "programs" / "trn.md"), "--json"]
    result = CliRunner().invoke(doctor_command, args, env=env)
    report = json.loads(result.output)
    kernel = _steps(report, kernel=True)["kernel"]
    assert "the nki namespace" in kernel["has"] and "neuronxcc.nki" in kernel["has"]
    if knobs:
        # Re-rendered in beta 1 from the committed knobs: fine.
        assert result.exit_code == 0 and kernel["status"] == "ok", kernel
        assert "rendering of ir/small/knobs.json" in kernel["path"]
        assert "path baremetal" in kernel["path"]
    else:
        # A hand-written nki.* kernel cannot go to this host: a failure with the fix.
        assert result.exit_code == 1 and kernel["status"] == "missing", kernel
        assert "which this host's Neuron SDK 2.22-2.26 does not have" in kernel["missing"]
        assert "kernelopt ir render --api beta1" in kernel["fix"]
