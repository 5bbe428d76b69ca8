"""Fake `nki.language`: names resolve to placeholders so module-level uses import."""

from __future__ import annotations

from typing import Any


class _Name:
    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> _Name:
        return _Name(f"{self.name}.{attr}")

    def __repr__(self) -> str:
        return f"nki.{self.name}"


def __getattr__(name: str) -> Any:
    return _Name(f"language.{name}")
