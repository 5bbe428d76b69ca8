"""Fake ``nki`` of an older SDK: enough for a kernel module to import and
decorate; kernels are compiled through neuronxcc.nki_standalone."""

from kernelopt.testing.fake_trn2 import config
from kernelopt.testing.fake_trn2.nki_stub import jit

from . import isa, language

__version__ = str(config.current()["nki_version"])
__all__ = ["isa", "jit", "language"]
