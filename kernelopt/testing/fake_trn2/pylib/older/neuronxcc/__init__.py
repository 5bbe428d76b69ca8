"""Fake neuronxcc package of an older SDK: only the NKI standalone compile entry point."""

__version__ = "2.21.0.0+fake"
