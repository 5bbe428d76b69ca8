"""Fake ``nkipy``: numpy functions traced and compiled by neuronx-cc, for the
compiler-baseline row. Only the calls kernelopt makes exist."""

__version__ = "0.1.0+fake"
