"""Fake ``nki`` wheel of SDK >= 2.32: ``nki.jit``, ``nki.language``, ``nki.isa`` for
kernel modules, and the compiler driver under ``nki.compiler.driver`` (sources in
that module's docstring). Importing ``nki`` next to ``nrtpy`` is what the nrtpy
getting-started page warns against (two environments)."""

from kernelopt.testing.fake_trn2 import config
from kernelopt.testing.fake_trn2.nki_stub import jit

from . import compiler, isa, language

__version__ = str(config.current()["nki_version"])
__all__ = ["compiler", "isa", "jit", "language"]
