"""Fake ``nki.isa``: names resolve to placeholders so module-level uses import."""

from typing import Any

from kernelopt.testing.fake_trn2.nki_stub import Name


def __getattr__(name: str) -> Any:
    return Name(f"isa.{name}")
