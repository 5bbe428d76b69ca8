"""Fake ``neuronpy``: nkipy's predecessor, numpy functions traced and compiled by
neuronx-cc (the compiler-baseline row on older SDKs). Source: awslabs/nki-autotune
``autotune/core/compile.py``@1433f19 (``from neuronpy.core.compile import
CompilationTarget, compile_to_neff, trace``); the wheel itself was not published."""

__version__ = "0.1.0+fake"
