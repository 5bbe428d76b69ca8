"""Fake ``nki.compiler``: the documented per-kernel configuration classes.

Source: the nki.compiler API reference (``en/v2.33.1/nki/api/nki.compiler.html``:
CompileConfig, SpecializationConfig, AddressRotation); their defaults are
unverified. The compile functions are in ``nki.compiler.driver``."""

from kernelopt.testing.fake_trn2.nki_stub import (
    AddressRotation,
    CompileConfig,
    SpecializationConfig,
)

__all__ = ["AddressRotation", "CompileConfig", "SpecializationConfig"]
