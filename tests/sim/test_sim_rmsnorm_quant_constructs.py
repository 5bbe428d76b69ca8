"""Beta-1 constructs nki-samples' rmsnorm_quant (``src/nki_samples/reference/
rmsnorm_quant`` @1ee7f1d) uses besides ``view(dtype)``, against hand-computed results:
``nl.abs`` as an ALU operator (the "Supported Math Operators for NKI ISA" table),
a tile indexed by a mask, and the internal names its helpers import."""

from __future__ import annotations

import numpy as np

from kernelopt.sim import run_kernel

HEADER = """
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

"""


def test_abs_as_an_alu_operator_in_tensor_scalar(kernel_file) -> None:
    # (|x| <op0 abs> 0.0) then * 2: |x| doubled; operand0 plays no part.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    r = nisa.tensor_scalar(data=t, op0=nl.abs, operand0=0.0, op1=nl.multiply, operand1=2.0)
    nl.store(out, value=r)
    return out
"""
    path, _ = kernel_file(HEADER + body)
    x = np.array([[-1.5, 2.0, 0.0], [3.0, -0.25, -4.0]], np.float32)
    assert run_kernel(path, {"x": x}).outputs.tolist() == [[3.0, 4.0, 0.0], [6.0, 0.5, 8.0]]


def test_a_tile_indexed_by_a_mask_is_cut_to_it(kernel_file) -> None:
    # t[i_p, i_f][i_f < 2]: the first two columns, as mask=(i_f < 2) would keep them.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    i_p, i_f = nl.mgrid[0:2, 0:4]
    r = nisa.tensor_copy(t[i_p, i_f][i_f < 2])
    nl.store(out, value=r)
    return out
"""
    path, _ = kernel_file(HEADER + body)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert run_kernel(path, {"x": x}).outputs.tolist() == [[0.0, 1.0], [4.0, 5.0]]


def test_internal_names_the_helpers_import(kernel_file) -> None:
    # sizeinbytes: 4 for float32, 1 for float8_e4m3, 2 for bfloat16; TileIndex is the
    # type of an index expression.
    body = """
import numpy as np
from neuronxcc.nki.language.constants import sizeinbytes
from neuronxcc.nki.compiler.backends.neuron.indexing import TileIndex
from neuronxcc.nki.compiler.backends.neuron.tensor import local_tile


@nki.jit
def k(x):
    out = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:1, 0:4]
    sizes = (sizeinbytes(np.float32), sizeinbytes(nl.float8_e4m3), sizeinbytes(nl.bfloat16))
    typed = 1.0 if isinstance(i_f, TileIndex) else 0.0
    for j, v in enumerate((*sizes, typed)):
        t[0:1, j : j + 1] = nl.full((1, 1), v, dtype=nl.float32)
    nl.store(out, value=t)
    return out
"""
    path, _ = kernel_file(HEADER + body)
    out = run_kernel(path, {"x": np.zeros((1, 1), np.float32)}).outputs
    assert out.tolist() == [[4.0, 1.0, 2.0, 1.0]]
