"""Fake `nki.isa`: names resolve to placeholders so module-level uses import."""

from __future__ import annotations

from typing import Any

from .language import _Name


def __getattr__(name: str) -> Any:
    return _Name(f"isa.{name}")
