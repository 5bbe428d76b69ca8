"""A tree measured again (BEST beside a challenger, a candidate inside the noise)
reuses its build: the CPU check's record and the NEFF. The device runs it afresh."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from kernelopt.neuron.target import NeuronTarget
from kernelopt.testing.fake_trn2 import FakeTrn2


def _compiles(fake: FakeTrn2) -> int:
    return len([c for c in fake.calls("neuronx-cc") if c["args"][0] == "compile"])


def _runs(fake: FakeTrn2) -> int:
    return len([c for c in fake.calls("nrtpy") if c["args"][0] == "benchmark"])


def test_the_same_tree_is_compiled_once_and_run_on_the_device_each_time(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    target = make_target()
    first = target.measure(make_tree())
    again = target.measure(make_tree())  # another folder, the same sources

    assert first.status == again.status == "ok", (first.error, again.error)
    assert _compiles(fake) == 1 and _runs(fake) == 2
    assert "neff_reused_from" not in first.extra
    assert again.extra["neff_reused_from"] == first.extra["key"]
    assert again.extra["key"] != first.extra["key"]
    # The reuse keeps the check's record; it has no compile times of its own.
    assert again.extra["cpu_check"] == first.extra["cpu_check"]
    assert "compile_started" in first.extra["timeline"]
    assert "compile_started" not in again.extra["timeline"]
    assert "measure_started" in again.extra["timeline"]
    # The device ran the very NEFF the first compile made.
    assert Path(again.artifacts["neff"]).read_bytes() == Path(first.artifacts["neff"]).read_bytes()
    assert again.artifacts["neff"] != first.artifacts["neff"]


def test_another_kernel_or_another_option_is_compiled_afresh(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    tree = make_tree()
    assert make_target().measure(tree).status == "ok"
    edited = make_tree()
    with (edited / "ir" / "small" / "kernel.py").open("a") as kernel:
        kernel.write("# edited\n")
    assert "neff_reused_from" not in make_target().measure(edited).extra
    other_opt = make_target(opt=1).measure(tree)
    assert other_opt.status == "ok" and "neff_reused_from" not in other_opt.extra
    assert _compiles(fake) == 3


def test_a_new_target_on_the_same_results_folder_reuses_the_build(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    # `kernelopt try` is a new process each time: the index is on disk, not in memory.
    first = make_target().measure(make_tree())
    again = make_target().measure(make_tree())
    assert again.extra["neff_reused_from"] == first.extra["key"]
    assert _compiles(fake) == 1


def test_a_build_whose_neff_is_gone_is_built_again(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    target = make_target()
    first = target.measure(make_tree())
    Path(first.artifacts["neff"]).unlink()
    again = target.measure(make_tree())
    assert again.status == "ok" and "neff_reused_from" not in again.extra
    assert _compiles(fake) == 2


def test_a_failed_compile_is_not_kept(
    fake: FakeTrn2, make_tree: Callable[..., Path], make_target: Callable[..., NeuronTarget]
) -> None:
    fake.configure(compile_error="ERROR: Out of memory in psum")
    target = make_target()
    assert target.measure(make_tree()).status == "failed"
    fake.configure(compile_error="")
    again = target.measure(make_tree())
    assert again.status == "ok" and "neff_reused_from" not in again.extra
    kept = [json.loads(p.read_text()) for p in (target.results_dir / "builds").glob("*.json")]
    assert len(kept) == 1 and kept[0]["origin"] == again.extra["key"]
