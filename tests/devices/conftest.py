from __future__ import annotations

from pathlib import Path

import pytest
from fake_tools import FakeTools


@pytest.fixture
def fakes(tmp_path: Path) -> FakeTools:
    return FakeTools(tmp_path / "fakes")


@pytest.fixture
def lock_dir(tmp_path: Path) -> str:
    return str(tmp_path / "locks")
