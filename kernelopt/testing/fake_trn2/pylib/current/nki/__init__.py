"""Fake ``nki`` wheel of the current SDK: ``nki.jit``, ``nki.language``,
``nki.isa`` for kernel modules, and the compile API under ``nki.compiler``."""

from kernelopt.testing.fake_trn2.nki_stub import jit

from . import compiler, isa, language

__version__ = "0.2.0+fake"
__all__ = ["compiler", "isa", "jit", "language"]
