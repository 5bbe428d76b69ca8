"""benchmarks/ir_random_workloads.py: the workloads it writes build, and its check finds
the faults it is there to find."""

from __future__ import annotations

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


def test_written_workloads_build_render_and_check_correct(tmp_path: Path) -> None:
    bench = _bench()
    for seed in (3, 4):  # a softmax, and a residual rms norm before a matmul
        kind, text = bench.workload_source(seed)
        path = tmp_path / f"random_{seed}.py"
        path.write_text(text)
        checked, failures = bench.check(path, 1)
        assert checked >= 1 and failures == [], (kind, failures)


def test_a_wrong_result_is_reported_not_hidden(tmp_path: Path) -> None:
    bench = _bench()
    _, text = bench.workload_source(3)
    # The workload's own semantics off by a factor: every state must now check wrong.
    path = tmp_path / "random_3.py"
    path.write_text(text.replace("return f_nkigym(", "return 2.0 * f_nkigym("))
    checked, failures = bench.check(path, 1)
    assert checked >= 1 and len(failures) == checked


def test_loading_the_benchmark_leaves_sys_path_alone() -> None:
    # benchmarks/ holds a ray.py: left on sys.path, it shadows the ray package.
    before = list(sys.path)
    _bench()
    assert sys.path == before
