"""Fake ``nkipy``: numpy functions traced and compiled by neuronx-cc, for the
compiler-baseline row. Sources per module: aws-neuron/nkipy
``nkipy/src/nkipy/core/compile.py``@1d93cbb and ``runtime/execute.py``@66974b2."""

__version__ = "0.1.0+fake"
