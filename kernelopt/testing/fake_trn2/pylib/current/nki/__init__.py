"""Fake ``nki`` wheel of the current SDK: ``nki.jit``, ``nki.language``,
``nki.isa`` for kernel modules, and the compile API under ``nki.compiler``."""

from kernelopt.testing.fake_trn2 import config
from kernelopt.testing.fake_trn2.nki_stub import jit

from . import compiler, isa, language

__version__ = str(config.current()["nki_version"])
__all__ = ["compiler", "isa", "jit", "language"]
