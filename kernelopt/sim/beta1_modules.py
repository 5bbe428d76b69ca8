"""The beta-1 modules a kernel imports: ``neuronxcc``, ``neuronxcc.nki`` and its
``language``, ``isa``, ``typing`` and ``compiler`` modules, bound to one
machine's beta-1 tile semantics."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelopt.sim import indexing
from kernelopt.sim.beta1 import Beta1
from kernelopt.sim.beta1_compiler import build_compiler
from kernelopt.sim.beta1_isa import add_isa
from kernelopt.sim.beta1_isa_more import add_isa_more, add_language_more
from kernelopt.sim.beta1_skip import SKIPPED, constant, make_skippable
from kernelopt.sim.beta1_tiles import ParDim
from kernelopt.sim.enums import add_enums
from kernelopt.sim.language import BUFFERS, finfo, iinfo
from kernelopt.sim.ops import OPS, Op
from kernelopt.sim.tensor import Tile

if TYPE_CHECKING:
    from kernelopt.sim.isa import Isa
    from kernelopt.sim.machine import Machine


@dataclass(frozen=True)
class CallableOp(Op):
    """A beta-1 ``nl.*`` op: passed as ``op=`` like the current API's, and also
    callable on tiles (``nl.exp(x)``, ``nl.add(a, b)``)."""

    impl: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        assert self.impl is not None
        return self.impl(self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"nl.{self.name}"


def _passthrough(jit: Callable[..., Any]) -> Callable[..., Any]:
    """``nki.baremetal``/``benchmark``/``simulate_kernel``: on the simulator, the kernel itself
    (``@nki.baremetal``, ``@nki.baremetal(...)`` or ``nki.baremetal(kernel)``)."""

    def wrap(func: Callable[..., Any] | None = None, **_options: Any) -> Any:
        return jit() if func is None else jit(func)

    return wrap


def _simulate_kernel(jit: Callable[..., Any]) -> Callable[..., Any]:
    """``nki.simulate_kernel(kernel, *args, **kwargs)``: runs the kernel on ``args`` and
    returns its result (https://awsdocs-neuron.readthedocs-hosted.com/en/v2.25.0/general/
    nki/api/generated/nki.simulate_kernel.html; the SDK's modulo-allocation tests call it
    so, with a numpy output the kernel stores into)."""

    def simulate(kernel: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return jit(kernel)(*args, **kwargs)

    return simulate


class _AnyType:
    """``nt.tensor[shape, dtype]`` annotations: accepted, meaningless here."""

    def __getitem__(self, key: Any) -> _AnyType:
        return self


def build_beta1_modules(
    machine: Machine, isa: Isa, nl2: types.ModuleType, jit: Callable[..., Any]
) -> tuple[Beta1, dict[str, types.ModuleType]]:
    """``neuronxcc``, ``neuronxcc.nki`` and its ``language``/``isa``/``typing`` modules,
    and the tile semantics the machine takes on when the kernel imports them."""
    beta = Beta1(machine, isa)
    nl = _language(beta, nl2)

    nisa = types.ModuleType("neuronxcc.nki.isa", "nki.isa (beta 1) as simulated")
    add_isa(nisa, beta, isa)
    add_isa_more(nisa, beta, isa)
    add_enums(nisa)
    add_language_more(nl, beta, isa)
    nl.dropout = lambda x, rate, dtype=None, mask=None, **_: nisa.dropout(
        x, rate, dtype=dtype, mask=mask
    )
    nl.random_seed = lambda seed, mask=None, **_: isa.random_seed(seed)
    nl.rand = lambda shape, dtype=np.float32, **_: _rand(beta, isa, shape, dtype)
    make_skippable(nl)
    make_skippable(nisa)
    nisa.get_nc_version = lambda: (
        nisa.nc_version.gen2 if machine.params.name == "trn1" else nisa.nc_version.gen3
    )
    # neuronxcc.nki.isa.constants holds the same enums: the v2.26.1 nki.isa.nc_transpose
    # page names nki.isa.constants.engine.tensor, and public beta-1 kernels import
    # oob_mode from it and pass engine=nki.isa.constants.engine.vector (which other
    # enums it holds is unverified; the simulator gives nisa's own).
    isa_constants = types.ModuleType("neuronxcc.nki.isa.constants")
    for name in ("engine", "oob_mode", "dge_mode", "reduce_cmd", "matmul_perf_mode"):
        setattr(isa_constants, name, getattr(nisa, name))
    nisa.constants = isa_constants

    compiler = build_compiler()

    typing = types.ModuleType("neuronxcc.nki.typing", "nki.typing (beta 1) as simulated")
    typing.tensor = _AnyType()
    nki = types.ModuleType("neuronxcc.nki", "neuronxcc.nki as simulated by kernelopt")
    nki.jit = jit
    for name in ("baremetal", "benchmark", "profile", "trace"):
        setattr(nki, name, _passthrough(jit))
    nki.simulate_kernel = _simulate_kernel(jit)
    nki.language, nki.isa, nki.typing, nki.compiler = nl, nisa, typing, compiler
    root = types.ModuleType("neuronxcc", "neuronxcc as simulated by kernelopt")
    root.nki = nki
    modules = {
        "neuronxcc": root,
        "neuronxcc.nki": nki,
        "neuronxcc.nki.language": nl,
        "neuronxcc.nki.isa": nisa,
        "neuronxcc.nki.isa.constants": isa_constants,
        "neuronxcc.nki.typing": typing,
        "neuronxcc.nki.compiler": compiler,
        **_internal_modules(machine),
    }
    return beta, modules


def _internal_modules(machine: Machine) -> dict[str, types.ModuleType]:
    """Internal neuronxcc modules public kernels import a name from: nki-samples'
    rmsnorm_quant helpers (``src/nki_samples/reference`` @1ee7f1d) import ``sizeinbytes``
    (an element's bytes, which they divide), ``TileIndex`` (an annotation: here the
    index-expression type) and ``local_tile`` (imported, unused: not simulated)."""

    def local_tile(*_: Any, **__: Any) -> Any:
        machine.fail("isa", "neuronxcc's local_tile is not simulated")

    constants = types.ModuleType("neuronxcc.nki.language.constants")
    constants.sizeinbytes = lambda dtype: np.dtype(dtype).itemsize
    index = types.ModuleType("neuronxcc.nki.compiler.backends.neuron.indexing")
    index.TileIndex = indexing.IndexExpr
    tensor = types.ModuleType("neuronxcc.nki.compiler.backends.neuron.tensor")
    tensor.local_tile = local_tile
    return {m.__name__: m for m in (constants, index, tensor)}


def _language(beta: Beta1, nl2: types.ModuleType) -> types.ModuleType:
    """``neuronxcc.nki.language``: the current API's ranges, buffers and dtypes,
    the callable ops, array constructors, loads, stores and matmul."""
    nl = types.ModuleType("neuronxcc.nki.language", "nki.language (beta 1) as simulated")
    for name in ("affine_range", "sequential_range", "static_range", "tile_size", "ds"):
        setattr(nl, name, getattr(nl2, name))
    for name, buffer in BUFFERS.items():
        setattr(nl, name, buffer)
    for name in dir(nl2):
        value = getattr(nl2, name)
        if isinstance(value, np.dtype):
            setattr(nl, name, value)
    nl.tfloat32 = np.dtype(np.float32)
    nl.finfo, nl.iinfo, nl.fp32 = finfo, iinfo, nl2.fp32
    _add_ops(nl, beta)
    nl.par_dim = ParDim
    nl.arange = indexing.arange
    nl.mgrid = indexing.mgrid
    _add_constructors(nl, beta)
    nl.shared_constant = beta.shared_constant
    # "The same behavior as nki.language.shared_constant", an identity (uint8 default).
    nl.shared_identity_matrix = lambda n, dtype=np.uint8, **_: beta.shared_constant(
        np.eye(int(n)), dtype
    )
    nl.load = beta.load
    nl.load_transpose2d = beta.load_transpose2d
    nl.store = beta.store
    nl.matmul = beta.matmul
    nl.transpose = beta.transpose
    nl.loop_reduce = beta.loop_reduce
    _add_spmd(nl, beta)
    nl.broadcast_to = lambda x, shape, **_: beta.broadcast_to(x, tuple(shape))
    nl.where = lambda condition, x, y, dtype=None, mask=None, **_: beta.where(
        condition, x, y, dtype, mask
    )
    nl.var = lambda x, axis, dtype=None, mask=None, **_: beta.var(x, axis, dtype, mask)
    nl.device_print = beta.device_print
    nl.expand_dims = _expand_dims
    return nl


def _rand(beta: Beta1, isa: Isa, shape: Any, dtype: Any) -> Tile:
    """``nl.rand(shape, dtype)``: a new tile of uniform draws in [0, 1)."""
    tile = beta.new(tuple(shape), beta._dtype(dtype, np.dtype(np.float32)))
    isa.random_fill(tile)
    return tile


def _expand_dims(data: Any, axis: Any) -> Any:
    """``nl.expand_dims(data, axis)``: ``data`` seen with unit axes inserted at ``axis``
    (an int or a tuple), a view as ``reshape`` makes one."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shape = list(data.shape)
    for a in sorted(a % (len(shape) + len(axes)) for a in axes):
        shape.insert(a, 1)
    return data.reshape(tuple(shape))


def _add_spmd(nl: types.ModuleType, beta: Beta1) -> None:
    """``nl.program_id``, ``num_programs``, ``program_ndim`` of the running SPMD program
    (``kernelopt.sim.spmd``), and the grid helpers ``nl.spmd_dim``/``nl.nc``."""
    m = beta.m

    def program_id(axis: int = 0) -> int:
        program = m.program
        return program.ids[axis] if program is not None and axis < len(program.ids) else 0

    def num_programs(axes: Any = None) -> int:
        grid = m.program.grid if m.program is not None else ()
        if axes is None:
            return int(np.prod(grid)) if grid else 1
        picked = axes if isinstance(axes, tuple | list) else (axes,)
        return int(np.prod([grid[a] if a < len(grid) else 1 for a in picked]))

    nl.program_id = program_id
    nl.num_programs = num_programs
    nl.program_ndim = lambda: len(m.program.grid) if m.program is not None else 0
    # One simulated core: a logical NeuronCore dimension is a plain grid axis. An
    # spmd_dim's size is the product of its parts: the nki.language.spmd_dim page and
    # the SDK's test_nki_spmd_grid.py give spmd_dim(nl.nc(2), 2) and
    # spmd_dim(2, nl.nc(2)) four programs on that axis, two per NeuronCore.
    nl.spmd_dim = lambda *sizes, **_kw: int(np.prod([int(s) for s in sizes]))
    nl.nc = lambda size: int(size)


def _add_ops(nl: types.ModuleType, beta: Beta1) -> None:
    """The callable ``nl.*`` ops, the reductions and ``nl.softmax``."""

    def op_call(op: Op, *args: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Any:
        held = constant(mask)
        if held is False:
            return SKIPPED
        mask = None if held else mask
        if op.arity == 1:
            return beta.unary(op, args[0], dtype, mask)
        return beta.binary(op.name, args[0], args[1], dtype, mask)

    for name, op in OPS.items():
        fields = {f.name: getattr(op, f.name) for f in dataclasses.fields(Op)}
        setattr(nl, name, CallableOp(**fields, impl=op_call))
    nl.true_divide = nl.divide

    def reducer(kind: str) -> Callable[..., Tile]:
        def reduce(
            x: Any,
            axis: Any,
            dtype: Any = None,
            mask: Any = None,
            keepdims: bool = False,
            **_: Any,
        ) -> Tile:
            return beta.reduce(kind, x, axis, dtype, keepdims, mask)

        reduce.__name__ = kind
        # nl.max etc. also name the operator of an ISA reduction (op=nl.max).
        base = {"sum": "add", "max": "maximum", "min": "minimum", "prod": "multiply"}
        if kind in base:
            reduce.nki_op = OPS[base[kind]]  # type: ignore[attr-defined]
        return reduce

    for kind in ("sum", "mean", "max", "min", "prod"):
        setattr(nl, kind, reducer(kind))

    def softmax(x: Any, axis: Any, dtype: Any = None, mask: Any = None, **_: Any) -> Tile:
        # exp(x - max) / sum, as the instructions it lowers to.
        top = beta.reduce("max", x, axis, keepdims=True, mask=mask)
        shifted = beta.binary("subtract", x, top, mask=mask)
        e = beta.unary(OPS["exp"], shifted, mask=mask)
        total = beta.reduce("sum", e, axis, keepdims=True, mask=mask)
        return beta.binary("divide", e, total, dtype, mask)

    nl.softmax = softmax


def add_convenience_calls(nl: types.ModuleType, beta: Beta1) -> None:
    """NKI 0.3.0's ``nki.language`` convenience calls in the current API: ``nl.exp(x)``,
    ``nl.maximum(x, y)``, ``nl.max(x, axis=)``, ``nl.softmax``, ``nl.full``, ``nl.ones``
    and the ``*_like`` constructors return new tiles, as in beta 1 (the NKI 0.3.0
    update guide: "convenience wrappers around nki.isa APIs"). They lower to the
    same instructions as the beta-1 calls; ``nl.ndarray`` and ``nl.zeros`` keep the
    current API's signatures, and ``t[...] = x`` stays an error."""
    _add_ops(nl, beta)
    kept = nl.ndarray, nl.zeros
    _add_constructors(nl, beta)
    nl.ndarray, nl.zeros = kept
    # The NKI 0.3.0 reference's nki.language.load(src, dtype), store(dst, value),
    # load_transpose2d(src, dtype), matmul(x, y, transpose_x) and transpose(x, dtype):
    # the beta-1 calls without mask=.
    nl.load = lambda src, dtype=None: beta.load(src, dtype=dtype)
    nl.load_transpose2d = lambda src, dtype=None: beta.load_transpose2d(src, dtype=dtype)
    nl.store = lambda dst, value: beta.store(dst, value)
    nl.matmul = lambda x, y, transpose_x=False: beta.matmul(x, y, transpose_x)
    nl.transpose = lambda x, dtype=None: beta.transpose(x, dtype)


def _add_constructors(nl: types.ModuleType, beta: Beta1) -> None:
    """``nl.ndarray``, ``nl.zeros``, ``nl.full``, ``nl.ones`` and their ``*_like``."""

    def ndarray(shape: Any, dtype: Any, buffer: Any = None, name: str = "", **_: Any) -> Any:
        return beta.ndarray(shape, dtype, buffer, name)

    def zeros(
        shape: Any,
        dtype: Any,
        buffer: Any = None,
        name: str = "",
        lazy_initialization: bool = False,
        **_: Any,
    ) -> Any:
        return beta.ndarray(shape, dtype, buffer, name, "lazy" if lazy_initialization else 0.0)

    def full(
        shape: Any, fill_value: Any, dtype: Any, buffer: Any = None, name: str = "", **_: Any
    ) -> Any:
        return beta.ndarray(shape, dtype, buffer, name, float(fill_value))

    nl.ndarray = ndarray
    nl.zeros = zeros
    nl.full = full
    nl.ones = lambda shape, dtype, buffer=None, name="", **_: full(shape, 1.0, dtype, buffer, name)
    nl.empty_like = lambda x, dtype=None, buffer=None, **_: ndarray(
        x.shape, dtype or x.dtype, buffer
    )
    nl.zeros_like = lambda x, dtype=None, buffer=None, **_: zeros(x.shape, dtype or x.dtype, buffer)
    nl.ones_like = lambda x, dtype=None, buffer=None, **_: full(
        x.shape, 1.0, dtype or x.dtype, buffer
    )
