"""Constructs public beta-1 kernels use that the simulator once refused: each test runs
a small kernel of our own with the construct and checks values worked out by hand."""

from __future__ import annotations

import numpy as np

from kernelopt.sim import run_kernel

HEADER = """
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""


def test_a_dataclass_in_an_imported_helper_module(kernel_file) -> None:
    # nki-samples' reference attention.py declares its FlashConfig as a dataclass; a
    # wrapper beside it imports the module. The simulator's own `from __future__ import
    # annotations` once leaked into the module (its annotations became strings, and the
    # dataclass machinery then looked the unregistered module up in sys.modules).
    kernel_file(
        HEADER
        + """
from dataclasses import dataclass

@dataclass(frozen=True)
class Config:
    scale: float = 3.0
    rows: int = 2

@nki.jit
def scaled(x, config=None):
    config = config or Config()
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:config.rows, :])
    nl.store(out[0:config.rows, :], value=nl.multiply(t, config.scale))
    return out
""",
        name="helper.py",
    )
    path, _ = kernel_file(
        """
from helper import Config, scaled

def run(x):
    return scaled(x, Config(scale=0.5))
"""
    )
    x = np.array([[2.0, 4.0], [-6.0, 8.0]], np.float32)
    r = run_kernel(path, {"x": x}, func="run")
    assert r.outputs.tolist() == [[1.0, 2.0], [-3.0, 4.0]]


def test_nc_matmul_copies_an_operand_in_psum_to_sbuf_first(kernel_file) -> None:
    # The public flash_attn_bwd passes nisa.nc_transpose results (PSUM) straight to
    # nisa.nc_matmul, whose operands TensorE reads from SBUF.
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def product(x, b):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nisa.nc_transpose(nl.load(x))       # [3, 2], in PSUM
    y = nisa.nc_matmul(xt, nl.load(b))       # xt.T @ b = x @ b
    nl.store(out, value=y)
    return out
"""
    )
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    b = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], np.float32)
    r = run_kernel(path, {"x": x, "b": b})
    assert r.outputs.tolist() == [[4.0, 5.0], [10.0, 11.0]]
    ops = [i.op for i in r.trace]
    # Transpose, then the copy out of PSUM, then the matmul.
    assert ops.index("nc_transpose") < ops.index("activation") < ops.index("nc_matmul")
