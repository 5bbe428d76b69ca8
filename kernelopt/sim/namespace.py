"""The ``nki`` modules a kernel sees, visible to that kernel only.

The kernel file runs in a fresh namespace whose ``__builtins__`` carries an
``__import__`` that answers ``nki*`` with this run's modules and defers
everything else to the real import. ``sys.modules`` is never touched, so a
real ``nki`` installation elsewhere in the process is unaffected.
"""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable, Mapping
from typing import Any

from kernelopt.sim.beta1_modules import build_beta1_modules
from kernelopt.sim.enums import add_enums
from kernelopt.sim.isa import ISA_CALLS, Isa
from kernelopt.sim.language import build_language
from kernelopt.sim.machine import Machine


class JitKernel:
    """What ``@nki.jit`` returns: the function, marked as a kernel entry point."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)


def _jit(func: Callable[..., Any] | None = None, **_options: Any) -> Any:
    # Both ``@nki.jit`` and ``@nki.jit(...)`` appear in real kernels; compiler
    # options mean nothing to the simulator.
    if func is None:
        return JitKernel
    return JitKernel(func)


def build_modules(machine: Machine) -> dict[str, types.ModuleType]:
    isa = Isa(machine)
    nl = build_language(machine, isa)
    nisa = types.ModuleType("nki.isa", "nki.isa as simulated by kernelopt")
    for name in ISA_CALLS:
        setattr(nisa, name, getattr(isa, name))
    add_enums(nisa)
    nki = types.ModuleType("nki", "nki as simulated by kernelopt")
    nki.jit = _jit
    nki.language = nl
    nki.isa = nisa
    modules = {"nki": nki, "nki.language": nl, "nki.isa": nisa}
    # The beta-1 API (neuronxcc.nki): importing it gives tiles its semantics.
    beta, beta_modules = build_beta1_modules(machine, isa, nl, _jit)
    modules.update(beta_modules)

    def enable_beta1() -> None:
        machine.beta1 = beta

    modules["neuronxcc"].__dict__["_kernelopt_enable"] = enable_beta1
    return modules


def kernel_builtins(modules: Mapping[str, types.ModuleType]) -> dict[str, Any]:
    real_import = builtins.__import__

    def sim_import(
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: tuple[str, ...] | None = (),
        level: int = 0,
    ) -> Any:
        root = name.partition(".")[0]
        if level == 0 and root in ("nki", "neuronxcc"):
            if name not in modules:
                raise ImportError(
                    f"{name} is not part of the simulated nki subset "
                    f"(available: {', '.join(sorted(modules))})"
                )
            if root == "neuronxcc":
                modules["neuronxcc"]._kernelopt_enable()
            return modules[name] if fromlist else modules[root]
        return real_import(name, globals, locals, fromlist or (), level)

    namespace = dict(vars(builtins))
    namespace["__import__"] = sim_import
    return namespace
