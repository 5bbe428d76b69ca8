"""`kernelopt run` of a knob program on the neuron device, end to end, on each SDK
layout of the fake toolchain (2.22 and 2.26: NKI beta 1 only, the baremetal path;
2.27: both namespaces; 2.30: nki with its older driver; 2.32: nrtpy).

On each: the baseline, the candidates and the compiler baseline are measured (none
failed), MFU is 2·MACs / (min device time · 78.64e12 · LNC), a wrong kernel is
`incorrect`, the lease of device 1 runs on chip 1's cores under LNC=2, and no
command prints a traceback. On the beta-1 layouts the knob program's kernels (written
against nki.*) are shipped as the beta-1 rendering of their knobs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks_support.gitrepo import git
from benchmarks_support.gitrepo import run_kernelopt as kernelopt

from kernelopt.ir import ir_for_workload, knobs_text, render_ir
from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"
MACS = 256 * 128 * 512
LNC = 2

PROGRAM = """---
name: trn
target:
  kind: nki
  workload: ir/small/workload.py
  kernel: ir/small/kernel.py
  knobs: ir/small/knobs.json
metric: {{name: mfu, better: higher}}
device:
  kind: neuron
  hosts: [localhost]
  python: {python}
  poll: 0.2s
  max_wait: 90s
  neuron:
    activate: {activate}
    {runtime}
    lnc: {lnc}
    compile_timeout: 60s
    iterations: 10
decide: {{noise: 1%, confirm: 1, max_samples: 1, correctness_seeds: 1}}
search: {{seed: 3}}
stop: {{max_candidates: 5}}
timeout: 3m
---
Tune the small kernel on Trainium2.
"""

# sdk: (namespace shipped, how, path, measuring tool whose calls record the core)
LAYOUTS = {
    "2.22": ("neuronxcc", "rendered", "baremetal", "neuronxcc.nki"),
    "2.26": ("neuronxcc", "rendered", "baremetal", "neuronxcc.nki"),
    "2.27": ("nki", "as written", "capture", "neuron-explorer:device"),
    "2.30": ("nki", "as written", "capture", "neuron-explorer:device"),
    "2.32": ("nki", "as written", "nrtpy", "nrtpy"),
}


def _repo(tmp_path: Path, sdk: str) -> tuple[Path, FakeTrn2, dict[str, str]]:
    fake = FakeTrn2(tmp_path / "fake-trn2").install(sdk=sdk)
    # Device 0 is in use by someone else: the run leases device 1, one lease at a time
    # (the compiler-baseline row is measured on the baseline's own lease).
    fake.configure(monitor_period_s=0.1, busy={"0": 4242})
    runtime = ""
    if fake.runtime_activate_path != fake.activate_path:
        runtime = f"runtime_activate: {fake.runtime_activate_path}"
    root = tmp_path / "repo"
    small = root / "ir" / "small"
    small.mkdir(parents=True)
    (root / "programs").mkdir()
    shutil.copy(KERNELS / "workload.py", small / "workload.py")
    ir = ir_for_workload(small / "workload.py")
    (small / "knobs.json").write_text(knobs_text(ir))
    (small / "kernel.py").write_text(render_ir(ir))
    (root / "programs" / "trn.md").write_text(
        PROGRAM.format(python=sys.executable, activate=fake.activate_path, runtime=runtime, lnc=LNC)
    )
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    env = {"PATH": f"{fake.bin_dir}:{os.environ['PATH']}"}
    env["KERNELOPT_LOCK_DIR"] = str(tmp_path / "locks")
    return root, fake, env


def _notes(root: Path) -> list[dict[str, Any]]:
    refs = git(root, "for-each-ref", "--format=%(refname)", "refs/kernelopt/trn-t/attempts")
    found = [
        json.loads(git(root, "notes", "--ref", "refs/notes/kernelopt", "show", ref))
        for ref in refs.split()
    ]
    return sorted(found, key=lambda n: n["attempt"])


def _check_measured(m: dict[str, Any], path: str) -> None:
    assert m["status"] == "ok", m["error"]
    extra = m["extra"]
    assert extra["sdk_path"] == path or extra.get("what")  # the baseline's NEFF may differ
    seconds = m["metrics"]["min_ms"] / 1e3
    want = 100 * 2 * MACS / (seconds * 78.64e12 * LNC)
    assert m["metrics"]["mfu"] == pytest.approx(want, rel=0.01)
    assert extra["lnc"] == LNC and extra["peak_flops"] == 78.64e12 * LNC
    # Device 1 at LNC=2 is logical cores 4-7, physical cores 8-15: chip 1.
    bound = extra["bound"]
    assert bound["chip"] == 1 and bound["lnc"] == LNC
    assert int(bound["visible_cores"]) in range(4, 8)
    assert 0 < m["metrics"]["roofline_percent"] <= 100


@pytest.mark.parametrize("sdk", sorted(LAYOUTS))
def test_a_knob_program_runs_end_to_end_on_each_sdk_layout(tmp_path: Path, sdk: str) -> None:
    namespace, how, path, tool = LAYOUTS[sdk]
    root, fake, env = _repo(tmp_path, sdk)
    run = ("run", "programs/trn.md", "--tag", "t", "--max-candidates", "2")
    proc = kernelopt(root, *run, env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Traceback" not in output
    notes = _notes(root)
    assert len(notes) == 3 and notes[0]["verdict"] == "baseline"
    for note in notes:
        m = note["measurement"]
        _check_measured(m, path)
        api = m["extra"]["kernel_api"]
        assert (api["api"], api["shipped"], api["path"]) == (namespace, how, path)
        if how == "rendered":
            assert api["rendered_from"] == "ir/small/knobs.json" and api["committed"] == "nki"
    reference = notes[0]["reference"]["measurement"]
    _check_measured(reference, path)
    assert notes[0]["reference"]["what"].startswith("f_numpy compiled by neuronx-cc")
    ran = [c for c in fake.calls(tool) if c.get("ran_on")]
    assert ran and all(c["ran_on"]["chip"] == 1 and c["ran_on"]["lnc"] == LNC for c in ran)
    if path == "baremetal":
        first = notes[0]["measurement"]["extra"]
        assert first["device_check"]["passed"] and first["compile_in_lease"]
        assert set(first["neuron_bench"]["percentiles_us"]) >= {"0", "50", "99"}
        baseline = "neuronpy" if sdk == "2.22" else "nkipy"
        assert notes[0]["reference"]["what"].endswith(f"({baseline})")

    # A wrong kernel, in the namespace the host takes, is incorrect.
    worktree = root / ".git" / "kernelopt" / "worktrees" / "trn-t"
    wrong = "kernel_beta1_wrong_rows.py" if namespace == "neuronxcc" else "kernel_wrong_rows.py"
    shutil.copy(KERNELS / wrong, worktree / "ir" / "small" / "kernel.py")
    tried = kernelopt(worktree, "try", "-m", "read the rows in another order", "--json", env=env)
    assert "Traceback" not in tried.stdout + tried.stderr
    data = json.loads(tried.stdout)
    assert tried.returncode == 12 and data["verdict"] == "incorrect", data


def test_a_beta1_host_checks_the_devices_output_and_refuses_a_hand_edited_nki_kernel(
    tmp_path: Path,
) -> None:
    root, fake, env = _repo(tmp_path, "2.26")
    run = ("run", "programs/trn.md", "--tag", "t", "--max-candidates", "1")
    assert kernelopt(root, *run, env=env).returncode == 0
    worktree = root / ".git" / "kernelopt" / "worktrees" / "trn-t"
    kernel = worktree / "ir" / "small" / "kernel.py"
    # The device computes one element wrong: baremetal's output fails the device check.
    fake.configure(device_fault={"index": [3, 100], "value": -50.0})
    shutil.copy(KERNELS / "kernel_beta1.py", kernel)
    proc = kernelopt(worktree, "try", "-m", "a beta-1 kernel by hand", "--json", env=env)
    data = json.loads(proc.stdout)
    assert proc.returncode == 12 and data["verdict"] == "incorrect", data
    m = _notes(root)[data["attempt"]]["measurement"]
    assert m["extra"]["check"] == "device" and m["extra"]["worst"]["index"] == [3, 100]
    assert m["extra"]["kernel_api"]["shipped"] == "as written"
    # A kernel against nki.* that is not the rendering of the knobs cannot go to this host.
    fake.configure(device_fault=None)
    shutil.copy(KERNELS / "kernel.py", kernel)
    proc = kernelopt(worktree, "try", "-m", "an nki kernel by hand", "--json", env=env)
    data = json.loads(proc.stdout)
    assert proc.returncode == 13 and data["verdict"] == "failed", data
    assert "Neuron SDK 2.22-2.26" in data["error"] and "nki namespace" in data["error"]
    assert "Traceback" not in proc.stdout + proc.stderr
