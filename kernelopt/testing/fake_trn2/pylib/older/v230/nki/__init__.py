"""Fake ``nki`` wheel in the layout offered as SDK 2.30-2.31: ``nki.jit``,
``nki.language``, ``nki.isa`` and the compiler driver (``nki.compiler.driver``, the
shape before June 2026; sources in that module), without ``nrtpy``
(aws-neuron-sdk runtime release notes: nrtpy first shipped in 2.32)."""

from kernelopt.testing.fake_trn2 import config
from kernelopt.testing.fake_trn2.nki_stub import jit

from . import compiler, isa, language

__version__ = str(config.current()["nki_version"])
__all__ = ["compiler", "isa", "jit", "language"]
