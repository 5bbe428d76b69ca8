"""Shared fixtures for the loop tests: benchmark repositories and an in-process CLI."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, build_bench_repo


@pytest.fixture
def quiet_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    """No benchmark noise or signalling unless a test asks for it."""
    monkeypatch.delenv("BENCH_NOISE", raising=False)
    monkeypatch.delenv("BENCH_PID_FILE", raising=False)


@pytest.fixture
def bench_repo(tmp_path: Path, quiet_bench: None) -> RepoFactory:
    """Build committed repositories with bench.py, knobs.json {"X": x0} and one program."""
    counter = itertools.count()

    def build(x0: Any = 100, **options: Any) -> BenchRepo:
        return build_bench_repo(tmp_path / f"repo{next(counter)}", x0, **options)

    return build


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, quiet_bench: None) -> Cli:
    return Cli(monkeypatch)
