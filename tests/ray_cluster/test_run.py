"""Whole `kernelopt run`s with device.executor ray, on command-target programs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from benchmarks_support.gitrepo import FAST_DECIDE, BenchRepo, Cli, git, make_repo

pytest.importorskip("ray")

from conftest import write_bench  # noqa: E402


def bench_repo(root: Path, ray: dict[str, Any], *, marker: Path | None = None) -> BenchRepo:
    """A repository with the fixed-latency benchmark and a program measuring it through Ray."""
    make_repo(root)
    write_bench(root, latency=0.1, marker=marker)
    front = {
        "name": "r",
        "target": {
            "kind": "command",
            "command": f"{sys.executable} -S bench.py",
            "results": {"format": "stdout"},
            "knobs": {"file": "knobs.json", "space": {"X": [100, 50]}},
        },
        "metric": {"name": "time", "better": "lower"},
        "device": {"kind": "none", "executor": "ray", "ray": ray},
        "decide": FAST_DECIDE,
        "timeout": "20s",
    }
    program = root / "programs" / "r.md"
    program.parent.mkdir()
    program.write_text("---\n" + yaml.safe_dump(front) + "---\nTune X.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a benchmark to tune")
    return BenchRepo(root, program, "r")


def test_a_run_through_a_local_ray_cluster_it_starts(tmp_path: Path) -> None:
    repo = bench_repo(tmp_path / "repo", {"address": "local", "num_cpus": 2})
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", "run", "programs/r.md", "--tag", "t", "--json"],
        cwd=repo.root,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    notes = repo.notes()
    assert [n["verdict"] for n in notes.values()] == ["baseline", "keep"]
    for note in notes.values():
        assert note["measurement"]["device"] == "ray:cpu"
        assert note["measurement"]["host"] == socket.gethostname()
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["event"] == "summary"


def test_a_worker_killed_mid_measurement_is_retried_once_by_the_runner(
    ray_cluster: Any, tmp_path: Path, cli: Cli
) -> None:
    marker = tmp_path / "killed"
    repo = bench_repo(
        tmp_path / "repo",
        {"address": "auto", "resources_per_device": {"neuron_cores": 1}, "task_timeout": "10s"},
        marker=marker,
    )
    result = cli("run", "programs/r.md", "--tag", "t", "--json", cwd=repo.root)
    assert result.exit_code == 0, result.output
    # Ray's driver prints worker deaths as "(raylet) ..." lines on stdout too.
    lines = result.stdout.splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    faults = [e for e in events if e["event"] == "host_fault"]
    assert len(faults) == 1 and faults[0]["attempt"] == 0  # the baseline, measured first
    assert "Actor" in faults[0]["error"]
    assert marker.exists()
    notes = repo.notes()
    assert [n["verdict"] for n in notes.values()] == ["baseline", "keep"]
    assert notes[0]["measurement"]["status"] == "ok"
    assert notes[0]["measurement"]["device"].startswith("ray:neuron_cores=")
