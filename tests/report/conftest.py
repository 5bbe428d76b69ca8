"""Real runs in real git repositories, recorded once per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from report_runs import RecordedRun, record_nki_run, record_toy_run


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordedRun]:
    yield record_toy_run(tmp_path_factory.mktemp("toy"))


@pytest.fixture(scope="session")
def nki_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordedRun]:
    yield record_nki_run(tmp_path_factory.mktemp("nki"))
