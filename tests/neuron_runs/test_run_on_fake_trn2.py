"""`kernelopt run` and `kernelopt try` on device neuron, end to end, with the fake
Trn2 toolchain on this machine, set up as SDK 2.32 (nki.compiler, neuron-explorer,
nrtpy in an environment of its own), 2.30 (nki.compiler in its older shape, no
nrtpy: profiler captures time the NEFF) and 2.27 (nki_standalone, no nrtpy).

gate (neuron-ls) -> probe -> CPU check -> compile -> run, check and time on the device ->
profile -> parse -> decide, and the compiler baseline through the same timing path.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks_support.gitrepo import git
from benchmarks_support.gitrepo import run_kernelopt as kernelopt

from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"

PROGRAM = """---
name: trn
target: {{kind: nki, workload: ir/small/workload.py, kernel: ir/small/kernel.py}}
metric: {{name: mfu, better: higher}}
device:
  kind: neuron
  hosts: [localhost]
  python: {python}
  poll: 0.2s
  max_wait: 2s
  neuron:
    activate: {activate}
    {runtime}
    compile_timeout: 60s
    iterations: 20
decide: {{noise: 1%, confirm: 2, max_samples: 3, correctness_seeds: 2}}
timeout: 2m
---
Tune the small kernel on Trainium2.
"""


def _setup(tmp_path: Path, sdk: str) -> tuple[Path, FakeTrn2, dict[str, str]]:
    fake = FakeTrn2(tmp_path / "fake-trn2").install(sdk=sdk)
    fake.configure(monitor_period_s=0.1)
    runtime = ""
    if fake.runtime_activate_path != fake.activate_path:
        runtime = f"runtime_activate: {fake.runtime_activate_path}"
    root = tmp_path / "repo"
    (root / "ir" / "small").mkdir(parents=True)
    (root / "programs").mkdir()
    shutil.copy(KERNELS / "workload.py", root / "ir" / "small" / "workload.py")
    shutil.copy(KERNELS / "kernel.py", root / "ir" / "small" / "kernel.py")
    (root / "programs" / "trn.md").write_text(
        PROGRAM.format(python=sys.executable, activate=fake.activate_path, runtime=runtime)
    )
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    # The runner's own shell: the fake's tools on PATH (for the gate), no SDK packages.
    env = {"PATH": f"{fake.bin_dir}:{__import__('os').environ['PATH']}"}
    env["KERNELOPT_LOCK_DIR"] = str(tmp_path / "locks")
    return root, fake, env


def _note(root: Path, attempt: int) -> dict[str, Any]:
    ref = f"refs/kernelopt/trn-t/attempts/{attempt}"
    return json.loads(git(root, "notes", "--ref", "refs/notes/kernelopt", "show", ref))


@pytest.fixture
def current(tmp_path: Path) -> tuple[Path, FakeTrn2, dict[str, str]]:
    return _setup(tmp_path, "current")


@pytest.mark.parametrize(
    ("sdk", "compile_api", "profiler", "environments"),
    [
        ("2.32", "nki.compiler", "neuron-explorer", "split"),
        ("2.30", "nki.compiler", "neuron-explorer", "one"),
        ("2.27", "nki_standalone", "neuron-explorer", "one"),
    ],
)
def test_a_run_measures_device_time_with_the_sdk_it_finds_and_records_which(
    tmp_path: Path, sdk: str, compile_api: str, profiler: str, environments: str
) -> None:
    nrtpy = sdk == "2.32"
    root, fake, env = _setup(tmp_path, sdk)
    proc = kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "device neuron" in proc.stdout.splitlines()[0]
    note = _note(root, 0)
    assert note["verdict"] == "baseline" and note["device"] == "neuron"
    m = note["measurement"]
    assert m["status"] == "ok" and 0 < m["metrics"]["mfu"] <= 100
    assert m["device"].startswith("neuron") and m["host"] == "localhost"
    extra = m["extra"]
    assert extra["timing"] == "device" and extra["peak_flops"] == 78.64e12
    assert extra["sdk"]["compile_api"] == compile_api == extra["compile_api"]
    assert extra["sdk"]["profiler"] == profiler and extra["sdk"]["environments"] == environments
    assert extra["sdk"]["path"] == ("nrtpy" if nrtpy else "capture") == extra["sdk_path"]
    if nrtpy:
        assert extra["device_check"]["passed"]
    else:
        # No nrtpy: the outputs a capture saved (--save-output) are checked against f_numpy.
        assert extra["device_check"]["status"] == "checked" and extra["device_check"]["passed"]
    assert extra["cpu_check"]["seeds"] == [0, 1]
    # The profile, with the profiler's field names, percent converted once.
    assert 1 < m["profile"]["tensor_engine_active_time_percent"] <= 100
    assert Path(m["artifacts"]["neff"]).exists() and Path(m["artifacts"]["ntff"]).exists()
    tools = {c["tool"] for c in fake.calls()}
    assert {"neuron-ls", "neuronx-cc", profiler} <= tools and ("nrtpy" in tools) == nrtpy
    # The host is probed once for the whole run, though several NEFFs were measured.
    if nrtpy:
        assert len([c for c in fake.calls("nrtpy") if c["args"][0] == "benchmark"]) >= 2
    for tool in ("neuronx-cc", profiler):
        assert len([c for c in fake.calls(tool) if c["args"] == ["--version"]]) == 1, tool
    assert extra["sdk"]["compiler_version"] == fake.settings()["compiler_version"]
    # The compiler baseline is measured once, through the same timing path as candidates.
    reference = note["reference"]["measurement"]
    assert reference["status"] == "ok", reference["error"]
    for key in ("timing", "timing_source", "peak_flops", "iterations", "mfu_source"):
        assert reference["extra"][key] == extra[key], key
    ledger = (root / ".git" / "kernelopt" / "worktrees" / "trn-t" / "performance.md").read_text()
    rows = [line for line in ledger.splitlines() if "| reference |" in line]
    assert len(rows) == 1 and "n/a" not in rows[0]
    status = json.loads(kernelopt(root, "status", "--json", env=env).stdout)
    assert status["reference"]["metric"] > 0


def _try(root: Path, env: dict[str, str], kernel: str, message: str) -> tuple[int, dict]:
    assert kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env).returncode == 0
    worktree = root / ".git" / "kernelopt" / "worktrees" / "trn-t"
    shutil.copy(KERNELS / kernel, worktree / "ir" / "small" / "kernel.py")
    proc = kernelopt(worktree, "try", "-m", message, "--json", env=env)
    return proc.returncode, json.loads(proc.stdout)


def test_a_kernel_reading_the_wrong_rows_is_incorrect(
    current: tuple[Path, FakeTrn2, dict[str, str]],
) -> None:
    root, fake, env = current
    code, data = _try(root, env, "kernel_wrong_rows.py", "load rhs blocks in the other order")
    assert code == 12 and data["verdict"] == "incorrect", data
    m = _note(root, data["attempt"])["measurement"]
    assert m["status"] == "incorrect" and m["extra"]["check"] == "cpu"
    assert m["extra"]["seed"] in (0, 1) and len(m["extra"]["worst"]["index"]) == 2
    assert "worst: output 0[" in data["error"]


def test_a_kernel_whose_device_output_is_wrong_is_incorrect_though_the_simulator_passes(
    current: tuple[Path, FakeTrn2, dict[str, str]],
) -> None:
    root, fake, env = current
    assert kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env).returncode == 0
    fake.configure(device_fault={"index": [3, 100], "value": -50.0})
    worktree = root / ".git" / "kernelopt" / "worktrees" / "trn-t"
    kernel = worktree / "ir" / "small" / "kernel.py"
    kernel.write_text(kernel.read_text() + "\n# hoisting next\n")
    proc = kernelopt(worktree, "try", "-m", "a comment only", "--json", env=env)
    data = json.loads(proc.stdout)
    assert proc.returncode == 12 and data["verdict"] == "incorrect", data
    m = _note(root, data["attempt"])["measurement"]
    assert m["extra"]["cpu_check"]["status"] == "ok" and m["extra"]["check"] == "device"
    assert m["extra"]["seed"] == 0 and m["extra"]["worst"]["index"] == [3, 100]
    assert "output 0[3, 100] is -50" in data["error"]


def test_a_compile_error_is_a_failed_attempt_with_the_compilers_message(
    current: tuple[Path, FakeTrn2, dict[str, str]],
) -> None:
    root, _, env = current
    code, data = _try(root, env, "kernel_psum_oom.py", "hold every accumulator in PSUM")
    assert code == 13 and data["verdict"] == "failed", data
    assert "psum" in data["error"].lower()


def test_try_and_log_json_carry_the_profile_device_host_and_timing(
    current: tuple[Path, FakeTrn2, dict[str, str]],
) -> None:
    root, fake, env = current
    assert kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env).returncode == 0
    worktree = root / ".git" / "kernelopt" / "worktrees" / "trn-t"
    kernel = worktree / "ir" / "small" / "kernel.py"
    kernel.write_text(kernel.read_text() + "\n# the same kernel, measured again\n")
    proc = kernelopt(worktree, "try", "-m", "a comment only", "--json", env=env)
    answer = json.loads(proc.stdout)
    rows = json.loads(kernelopt(root, "log", "--run", "trn-t", "--json", env=env).stdout)
    note = _note(root, answer["attempt"])["measurement"]
    for data in (answer, rows[answer["attempt"]]):
        assert data["timing"] == "device"
        assert data["device"] == note["device"] and data["device"].startswith("neuron")
        assert data["host"] == "localhost"
        # The profiler's own field names, as the note has them.
        assert data["profile"] == note["profile"]
        assert 0 < data["profile"]["mfu_estimated_percent"] <= 100
        assert "tensor_engine_active_time_percent" in data["profile"]
    assert rows[0]["timing"] == "device" and rows[0]["profile"]


def _edit(worktree: Path, text: str) -> None:
    kernel = worktree / "ir" / "small" / "kernel.py"
    kernel.write_text(kernel.read_text() + f"\n# {text}\n")


def test_a_bind_failure_on_bests_remeasure_is_retried_then_a_fault_never_the_candidates(
    current: tuple[Path, FakeTrn2, dict[str, str]],
) -> None:
    import hashlib

    root, fake, env = current
    assert kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env).returncode == 0
    best = _note(root, 0)["measurement"]["artifacts"]["neff"]
    digest = hashlib.sha256(Path(best).read_bytes()).hexdigest()
    worktree = root / ".git" / "kernelopt" / "worktrees" / "trn-t"
    # One NRT_FAILURE on BEST's NEFF (a compiler left running, say): re-gated, retried.
    fake.configure(bind_failures={"count": 1, "neff_sha256": digest})
    _edit(worktree, "a comment only")
    proc = kernelopt(worktree, "try", "-m", "a comment only", "--json", env=env)
    data = json.loads(proc.stdout)
    assert proc.returncode in (0, 10, 11) and data["verdict"] not in ("failed", "interrupted")
    failed = [c for c in fake.calls("nrtpy") if c.get("failed")]
    assert len(failed) == 1 and "NRT_FAILURE" in failed[0]["failed"]
    assert _note(root, data["attempt"])["measurement"]["status"] == "ok"
    # Failing on the retry too: kernelopt's fault (exit 4), the attempt left pending.
    (fake.home / "bind-failures.used").unlink()
    fake.configure(bind_failures={"count": 2, "neff_sha256": digest})
    _edit(worktree, "another comment")
    proc = kernelopt(worktree, "try", "-m", "another comment", "--json", env=env)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "re-measuring BEST failed" in proc.stderr and "not of the candidate" in proc.stderr
    pending = f"refs/kernelopt/trn-t/attempts/{data['attempt'] + 1}"
    assert git(root, "rev-parse", "--verify", "-q", pending)  # committed ...
    notes = git(root, "notes", "--ref", "refs/notes/kernelopt", "list", pending, check=False)
    assert notes == ""  # ... and undecided: no verdict recorded
    # Once the device is healthy the next try measures it as committed.
    proc = kernelopt(worktree, "try", "-m", "again", "--json", env=env)
    again = json.loads(proc.stdout)
    assert again["attempt"] == data["attempt"] + 1 and again["verdict"] != "failed", again


def test_the_compiler_baseline_is_measured_on_the_baselines_lease_with_one_device(
    tmp_path: Path,
) -> None:
    root, fake, env = _setup(tmp_path, "2.32")
    fake.configure(devices=1)
    assert kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env).returncode == 0
    note = _note(root, 0)
    baseline, reference = note["measurement"], note["reference"]["measurement"]
    assert reference["status"] == "ok", reference["error"]
    assert reference["extra"]["bound"] == baseline["extra"]["bound"]
    assert reference["device"] == baseline["device"]
