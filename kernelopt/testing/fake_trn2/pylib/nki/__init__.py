"""Fake `nki`: enough for a kernel module to import and decorate. The fake
compile layer reads the kernel's source file; calling a kernel needs a device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import isa, language  # noqa: F401


class Kernel:
    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "the fake nki cannot execute kernels; kernelopt compiles them through "
            "neuronxcc.nki_standalone (kernelopt sim runs them on the CPU)"
        )


def jit(fn: Callable[..., Any] | None = None, **_options: Any) -> Any:
    if fn is None:
        return lambda f: Kernel(f)
    return Kernel(fn)
