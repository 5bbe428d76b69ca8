"""The ``nki`` modules a kernel sees, visible to that kernel only.

The kernel file runs in a fresh namespace whose ``__builtins__`` carries an
``__import__`` that answers ``nki*`` with this run's modules and defers
everything else to the real import. The ``nki`` modules never enter
``sys.modules``, so a real ``nki`` installation elsewhere in the process is
unaffected; a module file the kernel imports is registered there under a
private name while the run lasts, as the kernel file itself is.
"""

from __future__ import annotations

import builtins
import functools
import itertools
import logging
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.sim.beta1_modules import add_convenience_calls, build_beta1_modules
from kernelopt.sim.dynamic import RegisterCalls, VirtualRegister
from kernelopt.sim.enums import add_enums
from kernelopt.sim.isa import ISA_CALLS, Isa
from kernelopt.sim.language import build_language
from kernelopt.sim.machine import Machine
from kernelopt.sim.nki_tensor import build_tensor_module
from kernelopt.sim.spmd import grid_of, launch

# Private names for the helper modules of each run in sys.modules.
_HELPER_MODULES = itertools.count()


class JitKernel:
    """What ``@nki.jit`` returns: the function, marked as a kernel entry point.

    Called from other kernel code (a wrapper), it runs as one launch
    (``kernelopt.sim.spmd``): numpy arguments become HBM tensors.
    ``kernel[gx, gy](...)`` runs it once per program of an SPMD grid.
    """

    def __init__(self, func: Callable[..., Any], machine: Machine | None = None) -> None:
        self.func = func
        self.machine = machine
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.machine is None:
            return self.func(*args, **kwargs)
        return launch(self.machine, self.func, (), args, kwargs)

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        sizes = grid_of(grid)
        machine = self.machine
        if machine is None:
            raise TypeError("an SPMD launch needs the simulator's nki.jit")
        return lambda *args, **kwargs: launch(machine, self.func, sizes, args, kwargs)


def _jit(
    func: Callable[..., Any] | None = None, machine: Machine | None = None, **_options: Any
) -> Any:
    # Both ``@nki.jit`` and ``@nki.jit(...)`` appear in real kernels; compiler
    # options mean nothing to the simulator.
    if func is None:
        return functools.partial(_jit, machine=machine)
    if isinstance(func, JitKernel):
        return func
    return JitKernel(func, machine)


def build_modules(machine: Machine) -> dict[str, types.ModuleType]:
    isa = Isa(machine)
    nl = build_language(machine, isa)
    nisa = types.ModuleType("nki.isa", "nki.isa as simulated by kernelopt")
    for name in ISA_CALLS:
        setattr(nisa, name, getattr(isa, name))
    # Registers and dynamic loops (kernelopt.sim.dynamic).
    registers = RegisterCalls(machine)
    for name in ("register_alloc", "register_move", "register_load", "register_store"):
        setattr(nisa, name, getattr(registers, name))
    nisa.VirtualRegister = VirtualRegister
    nl.dynamic_range, nl.fori_loop = registers.dynamic_range, registers.fori_loop
    add_enums(nisa)
    nki = types.ModuleType("nki", "nki as simulated by kernelopt")
    jit = functools.partial(_jit, machine=machine)
    nki.jit = jit
    # nki.simulate(kernel) (NKI 0.3.0's CPU simulator): here, the kernel itself.
    nki.simulate = lambda kernel, *_a, **_kw: kernel
    nki.language = nl
    nki.isa = nisa
    nki.tensor = build_tensor_module()
    modules = {"nki": nki, "nki.language": nl, "nki.isa": nisa, "nki.tensor": nki.tensor}
    # The beta-1 API (neuronxcc.nki): importing it gives tiles its semantics.
    beta, beta_modules = build_beta1_modules(machine, isa, nl, jit)
    add_convenience_calls(nl, beta)
    beta_nl = beta_modules["neuronxcc.nki.language"]
    nl.dropout = beta_nl.dropout
    # The current nki.language.program_id(axis=0), num_programs(axes=0) and
    # program_ndim() pages (Trn2/Trn3: "0 if no grid"); nki-library's kernel_helpers
    # reads them for its sharding info. Only num_programs' default differs from beta 1.
    nl.program_id, nl.program_ndim = beta_nl.program_id, beta_nl.program_ndim
    nl.num_programs = lambda axes=0: beta_nl.num_programs(axes)
    # nki.language.shared_constant (the latest and v2.32 reference pages): the constant
    # (an nki.tensor trace-time tensor or a numpy array; on the v2.32 page also a .npy
    # file's path) in shared HBM, as dtype= or, when none is given, its own dtype.
    nl.shared_constant = lambda constant, dtype=None: beta.shared_constant(
        np.load(constant) if isinstance(constant, str | Path) else constant, dtype
    )
    # nki.typing (NKI 0.3.0): nt.tensor[shape] annotations, meaningless here as in beta 1.
    nki.typing = modules["nki.typing"] = beta_modules["neuronxcc.nki.typing"]
    modules.update(beta_modules)
    # The same internal module under the other root: nki-samples' beta-1 neuron-team
    # transpose kernels (contributed/neuron-team-kernels/transpose.py @6dc4ebb) import
    # ``sizeinbytes`` from ``nki.language.constants`` beside ``neuronxcc.nki``.
    modules["nki.language.constants"] = modules["neuronxcc.nki.language.constants"]

    def enable_beta1() -> None:
        machine.beta1 = beta

    modules["neuronxcc"].__dict__["_kernelopt_enable"] = enable_beta1
    return modules


# The host-side modules a kernel file imports for the runner around its kernel:
# frameworks, Neuron's bindings, model code and logging (the nki-samples softmax
# tutorial imports torch_xla.core.xla_model, a contributed max-pool kernel torch for
# its reference, the rotary tutorial transformers and loguru, aws-neuron/nkipy's
# fused RMSNorm + GEMM kernels nkipy for their host wrapper; awslabs/
# state-space-models-neuron @3e6d165 ``rmsnorm.py`` einops and ``mamba2/conv1d_grouped.py``
# neuronx_distributed for their reference and tensor-parallel layer). Neuron's bindings
# need the Neuron runtime and none of them are kernelopt's dependencies, so where they
# are not installed a kernel file still loads; any use of them fails at its line.
FRAMEWORK_ROOTS = (
    "torch",
    "torch_xla",
    "torch_neuronx",
    "jax",
    "jax_neuronx",
    "libneuronxla",
    "transformers",
    "loguru",
    "nkipy",
    "neuronx_distributed",
    "einops",
)


class _AbsentBase:
    """The base a kernel file's class gets in place of an absent framework class."""

    def __init__(self, *_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError(
            f"{type(self).__name__} subclasses a framework class that is not installed "
            "here; the simulator runs the kernel function, not the framework code around it"
        )


class _Absent(types.ModuleType):
    """A framework module that is not installed: importable, unusable, but for the NKI
    entry points it carries (``aliases``, by qualified name)."""

    def __init__(self, name: str, aliases: Mapping[str, Any] | None = None) -> None:
        super().__init__(name)
        self._aliases = aliases or {}

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "_aliases":
            raise AttributeError(attr)
        qualified = f"{self.__name__}.{attr}"
        if qualified in self._aliases:
            return self._aliases[qualified]
        return _Absent(qualified, self._aliases)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        # A kernel file's host wrapper may subclass a framework class (``class
        # ConvNKI(nn.Conv1d)``, ``torch.autograd.Function``): the class is defined, and
        # only building an instance (the framework's code) fails.
        del bases
        return (_AbsentBase,)

    def __call__(self, *_args: Any, **_kwargs: Any) -> Any:
        root = self.__name__.partition(".")[0]
        raise RuntimeError(
            f"{self.__name__}: {root} is not installed here; the simulator runs the "
            "kernel function, not the framework code around it"
        )


class _KernelLogging(types.ModuleType):
    """``logging`` as a kernel file sees it: the real module, with ``logging.OFF``
    and a ``disable`` that changes nothing. The public CS149 starter kernels
    (stanford-cs149/asst4-trainium ``part1/kernels.py``, SDK 2.21 beta) call
    ``logging.disable(logging.OFF)`` right after importing ``neuronxcc.nki`` to quiet
    the compiler, so the Neuron environment defines ``OFF``; which module does, and
    its value, are unverified (taken as CRITICAL + 10). The simulator has no compiler
    log to quiet, and a kernel file must not silence the host process's logging."""

    OFF = logging.CRITICAL + 10

    def __getattr__(self, attr: str) -> Any:
        return getattr(logging, attr)

    @staticmethod
    def disable(level: int = logging.CRITICAL) -> None:
        del level


_KERNEL_LOGGING = _KernelLogging("logging")


def _framework_nki_entry_points(modules: Mapping[str, types.ModuleType]) -> dict[str, Any]:
    """The NKI decorators a framework module exports: ``torch_neuronx.nki_jit``, the
    beta-1 era's jit for PyTorch (the SDK's examples mm-nisa-spmd.py and prof-kernel.py
    decorate kernels ``@nki_jit`` after ``from torch_neuronx import nki_jit``; the legacy
    NKI programming model page shows the same). On the simulator it is the beta-1
    ``nki.jit``, and using it selects the beta-1 semantics."""
    beta1 = modules["neuronxcc.nki"]

    def nki_jit(func: Any = None, **options: Any) -> Any:
        modules["neuronxcc"]._kernelopt_enable()
        return beta1.jit(func, **options)

    return {"torch_neuronx.nki_jit": nki_jit}


def _relative_target(name: str, globals: Mapping[str, Any] | None, level: int) -> Path | None:
    """Where ``from <level dots><name> import ...`` points from the importing file: its
    folder, ``level - 1`` folders up, then ``name``'s parts (Python's relative imports;
    nki-library kernels import their package's utils so, ``from ..utils.x import y``)."""
    file = (globals or {}).get("__file__")
    if not file:
        return None
    base = Path(file).parent
    for _ in range(level - 1):
        base = base.parent
    return base.joinpath(*[p for p in name.split(".") if p])


def kernel_builtins(
    modules: Mapping[str, types.ModuleType],
    directory: Path | None = None,
    registered: list[str] | None = None,
) -> dict[str, Any]:
    """The kernel's builtins; a module file in ``directory`` (the kernel's folder,
    which Python puts first on the path of a script run from there), or one a
    relative import names, is run with these same builtins, once per run, so its
    own ``import nki`` gets this run's modules (the nki-samples attention tutorial
    imports its softmax helper so). Each such module enters ``sys.modules`` under a
    private name, appended to ``registered`` for the caller to remove after the run:
    the dataclass machinery looks a class's module up there (nki-samples'
    ``attention.py``, imported by a wrapper, declares its ``FlashConfig`` so)."""
    return _Importer(modules, directory, registered).namespace


class _Importer:
    """The ``__import__`` of a kernel's builtins (``kernel_builtins``)."""

    def __init__(
        self,
        modules: Mapping[str, types.ModuleType],
        directory: Path | None,
        registered: list[str] | None,
    ) -> None:
        self.modules, self.directory, self.registered = modules, directory, registered
        self.loaded: dict[Path, types.ModuleType] = {}
        self.real_import = builtins.__import__
        self.namespace = dict(vars(builtins))
        self.namespace["__import__"] = self

    def load(self, target: Path) -> types.ModuleType | None:
        """The module file (or package folder) ``target``, run once with these builtins."""
        path = target / "__init__.py" if target.is_dir() else target.with_suffix(".py")
        if not target.is_dir() and not path.is_file():
            return None
        if path not in self.loaded:
            name = f"kernelopt_sim_module_{next(_HELPER_MODULES)}_{target.name}"
            module = self.loaded[path] = types.ModuleType(name)
            module.__dict__.update({"__file__": str(path), "__builtins__": self.namespace})
            sys.modules[name] = module
            if self.registered is not None:
                self.registered.append(name)
            if path.is_file():
                exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
        return self.loaded[path]

    def relative(self, name: str, globals: Any, fromlist: Any, level: int) -> types.ModuleType:
        target = _relative_target(name, globals, level)
        module = self.load(target) if target is not None else None
        if module is None:
            raise ImportError(f"relative import {'.' * level}{name}: no module file found")
        for item in fromlist or ():
            sub = None if hasattr(module, item) else self.load(target / item)
            if sub is not None:
                setattr(module, item, sub)
        return module

    def from_ancestors(self, name: str, fromlist: Any) -> types.ModuleType | None:
        """``import pkg.mod`` that Python's path does not resolve, found as a package
        folder beside the kernel or in one of its parent folders: the repository
        root a project runs from (awslabs/nki-autotune's kernels import
        ``autotune.kernels.utils`` so, from ``autotune/kernels/``)."""
        if self.directory is None:
            return None
        parts = name.split(".")
        for base in (self.directory, *self.directory.parents):
            if not (base / parts[0]).is_dir() and not (base / f"{parts[0]}.py").is_file():
                continue
            chain = [self.load(base.joinpath(*parts[: i + 1])) for i in range(len(parts))]
            if any(m is None for m in chain):
                return None
            for parent, child, part in zip(chain, chain[1:], parts[1:], strict=False):
                setattr(parent, part, child)
            return chain[-1] if fromlist else chain[0]
        return None

    def __call__(
        self,
        name: str,
        globals: Mapping[str, Any] | None = None,
        locals: Mapping[str, Any] | None = None,
        fromlist: tuple[str, ...] | None = (),
        level: int = 0,
    ) -> Any:
        root, modules = name.partition(".")[0], self.modules
        if level == 0 and root in ("nki", "neuronxcc"):
            if name not in modules:
                raise ImportError(
                    f"{name} is not part of the simulated nki subset "
                    f"(available: {', '.join(sorted(modules))})"
                )
            if root == "neuronxcc":
                modules["neuronxcc"]._kernelopt_enable()
            return modules[name] if fromlist else modules[root]
        if level > 0:
            return self.relative(name, globals, fromlist, level)
        if name == "logging":
            return _KERNEL_LOGGING
        beside = self.directory is not None and (self.directory / f"{name}.py").is_file()
        if beside and "." not in name:
            return self.load(self.directory / name)
        try:
            return self.real_import(name, globals, locals, fromlist or (), level)
        except ModuleNotFoundError:
            found = self.from_ancestors(name, fromlist)
            if found is not None:
                return found
            if root not in FRAMEWORK_ROOTS:
                raise
            aliases = _framework_nki_entry_points(modules)
            return _Absent(root, aliases) if not fromlist else _Absent(name, aliases)
