"""Screening (search.screen) on the fake Trn2 device, end to end: pools estimated on
sim, the best measured, the rest recorded and listed by `kernelopt log --screened`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from benchmarks_support.gitrepo import git
from benchmarks_support.gitrepo import run_kernelopt as kernelopt
from benchmarks_support.processes import alive, children
from benchmarks_support.signals import as_foreground

from kernelopt.ir.knobs_io import ir_for_workload, knobs_text
from kernelopt.ir.render import render_ir
from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parents[1] / "neuron" / "kernels"

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
  max_wait: 2s
  neuron:
    activate: {activate}
    compile_timeout: 60s
    iterations: 10
decide: {{noise: 1%, confirm: 1, max_samples: 1, correctness_seeds: 1}}
search: {{seed: 3{screen}}}
stop: {{max_candidates: {candidates}}}
timeout: 2m
---
Tune the small kernel on Trainium2.
"""


def make_repo(tmp_path: Path, screen: str = "", candidates: int = 4) -> tuple[Path, dict[str, str]]:
    """A repository with a knob-tuned small matmul and the fake Trn2 toolchain (older SDK)."""
    fake = FakeTrn2(tmp_path / "fake-trn2").install(sdk="older")
    fake.configure(monitor_period_s=0.1)
    root = tmp_path / "repo"
    small = root / "ir" / "small"
    small.mkdir(parents=True)
    (root / "programs").mkdir()
    shutil.copy(KERNELS / "workload.py", small / "workload.py")
    ir = ir_for_workload(small / "workload.py")
    (small / "knobs.json").write_text(knobs_text(ir))
    (small / "kernel.py").write_text(render_ir(ir))
    program = PROGRAM.format(
        python=sys.executable, activate=fake.activate_path, screen=screen, candidates=candidates
    )
    (root / "programs" / "trn.md").write_text(program)
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    env = {"PATH": f"{fake.bin_dir}:{os.environ['PATH']}"}
    env["KERNELOPT_LOCK_DIR"] = str(tmp_path / "locks")
    return root, env


def notes(root: Path) -> list[dict[str, Any]]:
    refs = git(root, "for-each-ref", "--format=%(refname)", "refs/kernelopt/trn-t/attempts")
    found = [
        json.loads(git(root, "notes", "--ref", "refs/notes/kernelopt", "show", ref))
        for ref in refs.split()
    ]
    return sorted(found, key=lambda n: n["attempt"])


SCREEN = ", screen: {pool: 6, top: 2}"


@pytest.fixture(scope="module")
def screened_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root, env = make_repo(tmp_path_factory.mktemp("screened"), SCREEN, candidates=4)
    proc = kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, env


def test_every_measured_candidate_carries_its_sim_estimate_beside_the_device_figure(
    screened_run: tuple[Path, dict[str, str]],
) -> None:
    root, _ = screened_run
    measured = [n for n in notes(root) if n["verdict"] != "baseline"]
    assert len(measured) == 4
    for note in measured:
        screen = note["screen"]
        assert screen["pool"] >= 2 and 1 <= screen["rank"] <= 2
        assert 0 < screen["estimate"] <= 100
        assert screen["measured"] == note["metric"]
        assert note["measurement"]["device"].startswith("neuron")
        # The device is not the simulator: its figure differs from the estimate.
        assert screen["measured"] != pytest.approx(screen["estimate"], abs=1e-9)


def test_log_screened_lists_the_candidates_that_were_not_measured(
    screened_run: tuple[Path, dict[str, str]],
) -> None:
    root, env = screened_run
    proc = kernelopt(root, "log", "--screened", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows and all(not r["chosen"] for r in rows)
    measured = {n["signature"] for n in notes(root)}
    assert not measured & {r["signature"] for r in rows}
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok and all(isinstance(r["estimate"], float) and r["knobs"] for r in ok)
    # Within a round, every screened-out estimate is no better than the measured ones.
    for note in notes(root)[1:]:
        same_round = [r for r in ok if r["round"] == note["screen"]["round"]]
        assert all(r["estimate"] <= note["screen"]["estimate"] for r in same_round)
    plain = kernelopt(root, "log", "--screened", env=env)
    assert plain.returncode == 0 and "screened" in plain.stdout


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A run of the same program without search.screen (one candidate)."""
    root, env = make_repo(tmp_path_factory.mktemp("plain"), "", candidates=1)
    proc = kernelopt(root, "run", "programs/trn.md", "--tag", "t", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return root, env


def test_without_screen_keys_no_candidate_is_screened(
    plain_run: tuple[Path, dict[str, str]],
) -> None:
    root, env = plain_run
    assert all("screen" not in n for n in notes(root))
    assert not (root / ".git" / "kernelopt" / "screen").exists()
    rows = json.loads(kernelopt(root, "log", "--screened", "--json", env=env).stdout)
    assert rows == []


def test_sim_calibrate_fits_the_runs_measurements_and_sim_uses_the_file(
    screened_run: tuple[Path, dict[str, str]],
) -> None:
    root, env = screened_run
    out = root.parent / "calibration.json"
    proc = kernelopt(
        root, "sim", "calibrate", "--run", "trn-t", "--json", "--out", str(out), env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(proc.stdout)
    assert figures["pairs"] == len(notes(root)) == 5
    for key in ("error_before", "error_after"):
        assert figures[key] >= 0
    assert figures["spearman"] is None or -1 <= figures["spearman"] <= 1
    assert figures["params"] and json.loads(out.read_text())["params"] == figures["params"]
    small = root / "ir" / "small"
    args = ["sim", str(small / "kernel.py"), "--workload", str(small / "workload.py"), "--json"]
    default = json.loads(kernelopt(root, *args, env=env).stdout)
    calibrated = kernelopt(root, *args, "--calibration", str(out), env=env)
    assert calibrated.returncode == 0, calibrated.stderr
    assert json.loads(calibrated.stdout)["total_time"] != default["total_time"]
    plain = kernelopt(root, "sim", "calibrate", "--run", "trn-t", "--out", str(out), env=env)
    assert "error_after:" in plain.stdout and "spearman:" in plain.stdout


LIVE = ", screen: {pool: 4, top: 2, refit_every: 2}"


def _live(root: Path) -> dict[str, Any]:
    return json.loads((root / ".git" / "kernelopt" / "calibration" / "trn-t.live.json").read_text())


def _measured_up_to(root: Path, attempt: int) -> int:
    """Attempts the device measured up to ``attempt`` (a fit's pairs), the baseline included."""
    ok = [n for n in notes(root) if n["measurement"]["status"] == "ok"]
    return len([n for n in ok if n["attempt"] <= attempt])


@pytest.fixture(scope="module")
def live_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], dict]:
    """A screened run refitted live, stopped after 5 candidates and then resumed for 3;
    also the live figures and the last attempt when the first invocation ended."""
    root, env = make_repo(tmp_path_factory.mktemp("live"), LIVE, candidates=20)
    args = ("run", "programs/trn.md", "--tag", "t", "--max-candidates")
    first = kernelopt(root, *args, "5", env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    before = {**_live(root), "last_attempt": max(n["attempt"] for n in notes(root))}
    again = kernelopt(root, *args, "3", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    return root, env, before


def test_a_screened_run_refits_the_model_to_its_measurements_across_a_resume(
    live_run: tuple[Path, dict[str, str], dict],
) -> None:
    root, _, before = live_run
    after = _live(root)
    for figures in (before, after):
        assert figures["pairs"] >= 4 and figures["params"]
        # Every measured attempt up to the refit is a pair, the baseline included.
        assert figures["pairs"] == _measured_up_to(root, figures["refit_at_attempt"])
    # A refit after the resume had the first invocation's measurements as pairs too.
    assert after["refit_at_attempt"] > before["last_attempt"]
    # Pools drawn after a refit were estimated with it, and their notes say which.
    refits = {n["screen"].get("refit") for n in notes(root) if "screen" in n}
    assert before["refit_at_attempt"] in refits and None in refits


def test_status_and_report_show_the_live_figures(
    live_run: tuple[Path, dict[str, str], dict],
) -> None:
    root, env, _ = live_run
    figures = _live(root)
    data = json.loads(kernelopt(root, "status", "--json", env=env).stdout)
    assert data["calibration"] == figures
    human = kernelopt(root, "status", env=env).stdout
    line = next(x for x in human.splitlines() if "sim vs device" in x)
    # ρ is undefined (n/a) when the held-out predictions or the measurements are all equal.
    rho = figures["spearman"]
    assert (f"ρ {rho:.2f}" if rho is not None else "ρ n/a") in line
    assert f"error {figures['error_after']:.2f} pp over {figures['pairs']} measurements" in line
    assert f"refit at attempt {figures['refit_at_attempt']}" in line
    out = root.parent / "report"
    assert kernelopt(root, "report", "--out", str(out), env=env).returncode == 0
    page = (out / "index.html").read_text()
    assert "Screening model" in page and f"refit at attempt {figures['refit_at_attempt']}" in page


def test_a_run_without_screening_shows_no_live_figures(
    plain_run: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    root, env = plain_run
    assert json.loads(kernelopt(root, "status", "--json", env=env).stdout)["calibration"] is None
    assert "sim vs device" not in kernelopt(root, "status", env=env).stdout
    out = tmp_path / "report"
    assert kernelopt(root, "report", "--out", str(out), env=env).returncode == 0
    assert "Screening model" not in (out / "index.html").read_text()


def test_ctrl_c_in_a_screened_run_leaves_no_estimate_worker_behind(tmp_path: Path) -> None:
    root, env = make_repo(tmp_path, LIVE, candidates=30)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelopt.cli", "run", "programs/trn.md", "--tag", "t"],
        preexec_fn=as_foreground,
        cwd=root,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    screen = root / ".git" / "kernelopt" / "screen" / "trn-t.jsonl"
    workers: set[int] = set()
    deadline = time.monotonic() + 120
    # Past the third round: the workers run, a guess was estimated ahead, a refit started.
    while time.monotonic() < deadline and proc.poll() is None:
        workers |= children(proc.pid)
        rounds = (
            {json.loads(x)["round"] for x in screen.read_text().splitlines()}
            if screen.exists()
            else set()
        )
        if len(rounds) >= 3:
            break
        time.sleep(0.05)
    workers |= children(proc.pid)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)  # the runner only, as `kill -INT` would
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert workers
    deadline = time.monotonic() + 10
    while any(alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in workers if alive(p)]
