"""benchmarks/ir_random_workloads.py: the workloads it writes build, and its check finds
the faults it is there to find."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks_support.modules import load_module

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    return load_module(
        "ir_random_workloads_bench",
        ROOT / "benchmarks" / "ir_random_workloads.py",
        ROOT / "benchmarks",
    )


def test_a_seed_writes_the_same_workload_and_every_kind_appears() -> None:
    bench = _bench()
    assert bench.workload_source(7) == bench.workload_source(7)
    kinds = {bench.workload_source(seed)[0] for seed in range(60)}
    assert kinds == set(bench.KINDS)
    _, large = bench.workload_source(7, "large")
    assert "2048" in large or "1024" in large


def _seed_of(bench, kind: str) -> int:
    return next(seed for seed in range(500) if bench.workload_source(seed)[0] == kind)


def test_written_workloads_build_render_and_check_correct(tmp_path: Path) -> None:
    bench = _bench()
    for kind in ("softmax", "resid_rms_mm"):
        seed = _seed_of(bench, kind)
        _, text = bench.workload_source(seed)
        path = tmp_path / f"random_{seed}.py"
        path.write_text(text)
        checked, failures = bench.check(path, 1)
        assert checked >= 1 and failures == [], (kind, failures)


def test_fp32_workloads_declare_fp32_inputs_and_check_correct(tmp_path: Path) -> None:
    bench = _bench()
    seed = _seed_of(bench, "rms_mm")
    _, text = bench.workload_source(seed, dtype="float32")
    assert "'float32'" in text and "'bfloat16'" not in text
    path = tmp_path / f"random_{seed}_fp32.py"
    path.write_text(text)
    checked, failures = bench.check(path, 1)
    assert checked >= 1 and failures == [], failures


def test_a_wrong_result_is_reported_not_hidden(tmp_path: Path) -> None:
    bench = _bench()
    _, text = bench.workload_source(_seed_of(bench, "softmax"))
    # The workload's own semantics off by a factor: every state must now check wrong.
    path = tmp_path / "random_softmax.py"
    path.write_text(text.replace("return f_nkigym(", "return 2.0 * f_nkigym("))
    checked, failures = bench.check(path, 1)
    assert checked >= 1 and len(failures) == checked


def test_loading_the_benchmark_leaves_sys_path_alone() -> None:
    # benchmarks/ holds a ray.py: left on sys.path, it shadows the ray package.
    before = list(sys.path)
    _bench()
    assert sys.path == before


def test_the_command_checks_the_kinds_asked_for_and_refuses_unknown_ones(tmp_path: Path) -> None:
    script = str(ROOT / "benchmarks" / "ir_random_workloads.py")
    run = subprocess.run(
        [sys.executable, script, "--count", "2", "--kinds", "rms", "--samples", "1"]
        + ["--keep", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in run.stdout.splitlines()]
    assert [r["kind"] for r in rows] == ["rms", "rms"]
    assert all(r["checked"] >= 1 and not r["failures"] for r in rows)
    bad = subprocess.run(
        [sys.executable, script, "--kinds", "rms,nope"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "unknown ['nope']" in bad.stderr
