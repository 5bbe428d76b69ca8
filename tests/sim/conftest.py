"""Helpers for the simulator tests: the example kernels and inline kernel files."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

KERNELS = Path(__file__).parent / "kernels"
HERE = Path(__file__).parent


@pytest.fixture
def kernel_file(tmp_path: Path) -> Callable[[str], tuple[Path, int]]:
    """Write an inline kernel; return its path and the line marked ``# <-``."""

    def write(source: str, name: str = "kernel.py") -> tuple[Path, int]:
        text = textwrap.dedent(source).lstrip("\n")
        path = tmp_path / name
        path.write_text(text)
        marked = [i for i, line in enumerate(text.splitlines(), 1) if "# <-" in line]
        return path, marked[0] if marked else 0

    return write


@pytest.fixture
def uniform() -> Callable[..., np.ndarray]:
    """Seeded float32 values in [low, 1)."""

    def make(shape: tuple[int, ...], seed: int = 0, low: float = -1.0) -> np.ndarray:
        return np.random.default_rng(seed).uniform(low, 1.0, size=shape).astype(np.float32)

    return make
