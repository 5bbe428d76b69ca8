"""Fake ``nkipy.runtime``: only the compile step (``execute._compile_kernel``);
kernelopt runs the baseline's NEFF through nrtpy like any candidate."""
