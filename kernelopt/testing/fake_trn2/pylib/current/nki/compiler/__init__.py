"""Fake ``nki.compiler``: the documented per-kernel configuration classes.

Source: the nki.compiler API reference (``en/v2.33.1/nki/api/nki.compiler.html``:
CompileConfig, SpecializationConfig, AddressRotation); their defaults are
unverified. The compile functions are in ``nki.compiler.driver``."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class AddressRotation(enum.Enum):
    """Whether the backend may rotate a memloc's address for better layout."""

    AUTO = "auto"
    DISABLED = "disabled"


@dataclass
class CompileConfig:
    address_rotation: AddressRotation | None = None
    non_ssa_legalization: bool | None = None
    dead_code_elim: bool | None = None
    barrier_check: bool | None = None
    prefetch_auto: bool | None = None
    nki_alloc_fallback: bool | None = None


@dataclass
class SpecializationConfig:
    allow_nested_config_override: bool | None = None
