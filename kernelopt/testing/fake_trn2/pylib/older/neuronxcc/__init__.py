"""Fake neuronxcc package of an older SDK: only the NKI standalone compile entry point."""

from kernelopt.testing.fake_trn2 import config

__version__ = str(config.current()["compiler_version"])
