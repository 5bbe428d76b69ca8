"""compile_while_measuring: builds queued at once, measures in order, overlap
proven with events rather than clocks."""

from __future__ import annotations

import threading

import pytest

from kernelopt.neuron.pipeline import compile_while_measuring


def test_a_later_build_runs_while_an_earlier_item_is_measured() -> None:
    measuring_first = threading.Event()
    saw_measure: dict[int, bool] = {}
    order: list[str] = []
    lock = threading.Lock()

    def build(item: int) -> int:
        if item == 2:
            # Only finishes early if the device started on item 0 meanwhile.
            saw_measure[item] = measuring_first.wait(timeout=10)
        with lock:
            order.append(f"built {item}")
        return item * 10

    def measure(item: int, built: int) -> str:
        with lock:
            order.append(f"measure {item}")
        if item == 0:
            measuring_first.set()
        return f"{item}:{built}"

    results = compile_while_measuring([0, 1, 2], build, measure, workers=2)
    assert results == ["0:0", "1:10", "2:20"]
    assert saw_measure == {2: True}
    for item in range(3):
        assert order.index(f"built {item}") < order.index(f"measure {item}")


def test_all_builds_are_queued_before_the_first_measurement() -> None:
    started: list[int] = []
    gate = threading.Event()

    def build(item: int) -> int:
        started.append(item)
        if len(started) == 3:
            gate.set()
        return item

    def measure(item: int, built: int) -> int:
        # With three workers every build has begun by the time we measure.
        assert gate.wait(timeout=10)
        return built

    assert compile_while_measuring([0, 1, 2], build, measure, workers=3) == [0, 1, 2]


def test_no_workers_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        compile_while_measuring([1], lambda i: i, lambda i, b: b, workers=0)


def test_an_empty_batch_measures_nothing() -> None:
    assert compile_while_measuring([], lambda i: i, lambda i, b: b, workers=4) == []
