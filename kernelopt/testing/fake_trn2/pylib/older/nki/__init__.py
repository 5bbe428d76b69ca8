"""Fake ``nki`` of an older SDK: enough for a kernel module to import and
decorate; kernels are compiled through neuronxcc.nki_standalone."""

from kernelopt.testing.fake_trn2.nki_stub import jit

from . import isa, language

__version__ = "0.1.0+fake"
__all__ = ["isa", "jit", "language"]
