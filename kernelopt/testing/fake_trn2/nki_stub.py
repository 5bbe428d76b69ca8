"""What both fake ``nki`` packages share: ``@nki.jit``, placeholder names and the
configuration classes of ``nki.compiler``.

A kernel module must import and decorate under the fake; nothing here runs a
kernel. ``nki.jit`` follows the documented signature
(``nki.jit(fn=None, *, compile_config=None, specialization_config=None, **kwargs)``);
calling the decorated kernel directly would compile and run it on a device
(about 20 s a call on real hardware), which kernelopt never does, so the fake
refuses.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Name:
    """Any attribute of nki.language / nki.isa, e.g. ``nl.bfloat16``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Name:
        return Name(f"{self.name}.{attr}")

    def __repr__(self) -> str:
        return f"nki.{self.name}"


class JitKernel:
    def __init__(self, func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.func = func
        self.options = options
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "the fake nki does not run kernels: calling an @nki.jit kernel compiles and "
            "runs it on a device; kernelopt compiles through the SDK's compile API"
        )


def jit(
    fn: Callable[..., Any] | None = None,
    *,
    compile_config: Any = None,
    specialization_config: Any = None,
    **kwargs: Any,
) -> Any:
    options = {"compile_config": compile_config, "specialization_config": specialization_config}
    options.update(kwargs)
    if fn is None:
        return lambda f: JitKernel(f, options)
    return JitKernel(fn, options)


# nki.compiler's per-kernel configuration classes (the nki.compiler API reference,
# ``en/v2.33.1/nki/api/nki.compiler.html``: CompileConfig, SpecializationConfig,
# AddressRotation; their defaults are unverified), the same in both fake packages.


class AddressRotation(enum.Enum):
    """Whether the backend may rotate a memloc's address for better layout."""

    AUTO = "auto"
    DISABLED = "disabled"


@dataclass
class CompileConfig:
    address_rotation: AddressRotation | None = None
    non_ssa_legalization: bool | None = None
    dead_code_elim: bool | None = None
    barrier_check: bool | None = None
    prefetch_auto: bool | None = None
    nki_alloc_fallback: bool | None = None


@dataclass
class SpecializationConfig:
    allow_nested_config_override: bool | None = None
