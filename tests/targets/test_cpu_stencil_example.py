"""The CPU example kernel, its benchmark and its program, run for real on small grids."""

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import yaml

from kernelopt.measurement import INCORRECT, OK
from kernelopt.proposers.space import KnobSpace
from kernelopt.targets.command import CommandTarget, ResultsSpec

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "ir" / "cpu_stencil"
PROGRAM = ROOT / "programs" / "cpu_stencil.md"
FAST = {"CPU_STENCIL_SIZES": "40,67", "CPU_STENCIL_REPEATS": "1"}


def front_matter() -> dict:
    text = PROGRAM.read_text()
    return yaml.safe_load(text.split("---\n")[1])


def program_target() -> CommandTarget:
    meta = front_matter()
    target = meta["target"]
    return CommandTarget(
        command=target["command"],
        metric=meta["metric"]["name"],
        better=meta["metric"]["better"],
        results=ResultsSpec(**target["results"]),
        correct=target["correct"],
        config_columns=tuple(target["config_columns"]),
        timeout_s=60,
    )


def load_kernel() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cpu_stencil_kernel", EXAMPLE / "kernel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(
        EXAMPLE, tmp_path / "ir" / "cpu_stencil", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path


def test_bench_writes_the_declared_columns_and_passes_its_check(tree: Path) -> None:
    m = program_target().measure(tree, env=FAST)
    assert m.status == OK, m.error + "\n" + m.log_tail
    assert set(m.rows[0]) == {"n", "block", "order", "time_us", "median_us", "err"}
    assert [r["n"] for r in m.rows] == [40, 67]
    knobs = json.loads((tree / "ir/cpu_stencil/knobs.json").read_text())
    assert all(r["block"] == knobs["BLOCK"] and r["order"] == knobs["ORDER"] for r in m.rows)
    assert set(m.extra["classes"]) == {"n=40", "n=67"}
    assert m.metrics["time_us"] > 0
    assert (tree / "results" / "cpu_stencil.csv").exists()


def test_a_kernel_that_skips_work_is_caught_as_incorrect(tree: Path) -> None:
    kernel = tree / "ir/cpu_stencil/kernel.py"
    kernel.write_text(
        kernel.read_text() + "\n\ndef stencil(grid, steps, block, order):\n    return grid.copy()\n"
    )
    m = program_target().measure(tree, env=FAST)
    assert m.status == INCORRECT
    assert "n=40" in m.error and "n=67" in m.error


@pytest.mark.parametrize("order", ["rows", "cols", "tiles"])
@pytest.mark.parametrize("block", [1, 3, 16, 100])
def test_every_tiling_matches_the_untiled_stencil(order: str, block: int) -> None:
    kernel = load_kernel()
    grid = np.random.default_rng(0).random((37, 37), dtype=np.float32)
    expected = grid
    for _ in range(3):
        expected = kernel.jacobi_step(expected)
    got = kernel.stencil(grid, 3, block, order)
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert not np.allclose(got, grid)


def test_unknown_order_is_refused() -> None:
    with pytest.raises(ValueError, match="order must be one of rows, cols, tiles"):
        load_kernel().stencil(np.zeros((8, 8), np.float32), 1, 4, "zigzag")


def test_program_knob_space_holds_the_committed_knobs() -> None:
    knobs = front_matter()["target"]["knobs"]
    space = KnobSpace(knobs["file"], knobs["space"])
    assert space.size == 24
    current = space.default(ROOT)
    assert current in list(space)
    assert space.render(current) == (ROOT / knobs["file"]).read_text()
