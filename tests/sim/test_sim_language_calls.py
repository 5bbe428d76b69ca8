"""NKI 0.3.0's ``nki.language`` convenience calls in the current API, each against a
hand-computed result: they return new tiles and lower to ISA instructions."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

HEADER = """
import nki
import nki.isa as nisa
import nki.language as nl
import nki.typing as nt

"""


def _run(kernel_file, body: str, **inputs: np.ndarray):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs)


def test_a_window_max_over_an_access_pattern(kernel_file) -> None:
    # Rows of 4: windows [[1, 2], [1, 2]] over a (2, 4) tile read as (2, 3, 2) overlapping
    # pairs; each row's pair maxima are its elements 1..3.
    x = np.array([[1.0, 5.0, 2.0, 8.0], [9.0, 0.0, 3.0, 4.0]], np.float32)
    body = """
@nki.jit
def k(x: nt.tensor[2, 4]):
    out = nl.ndarray((2, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    m = nl.max(t.ap(pattern=[[4, 2], [1, 3], [1, 2]]), axis=[2])
    nisa.dma_copy(dst=out, src=m)
    return out
"""
    run = _run(kernel_file, body, x=x)
    assert run.outputs.tolist() == [[5.0, 5.0, 8.0], [9.0, 3.0, 4.0]]


def test_elementwise_calls_constructors_and_softmax(kernel_file) -> None:
    # out = softmax(x) over each row of [[0, ln 3]] -> [0.25, 0.75]; plus
    # maximum(x, full 0.5) + ones = [[1.5, 1 + ln 3]].
    x = np.array([[0.0, np.log(3.0)]], np.float32)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    s = nl.softmax(t, axis=[1])
    y = nl.add(nl.maximum(t, nl.full((1, 2), 0.5, dtype=nl.float32)), nl.ones_like(t))
    nisa.dma_copy(dst=out[:, 0:2], src=s)
    nisa.dma_copy(dst=out[:, 2:4], src=y)
    return out
"""
    run = _run(kernel_file, body, x=x)
    np.testing.assert_allclose(run.outputs, [[0.25, 0.75, 1.5, 1 + np.log(3.0)]], rtol=1e-6)


def test_tiles_are_still_written_only_by_calls(kernel_file) -> None:
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    t[...] = nl.exp(t)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    with pytest.raises(SimError, match="written by ISA calls"):
        _run(kernel_file, body, x=np.zeros((1, 2), np.float32))


def test_nki_simulate_returns_the_kernel(kernel_file) -> None:
    body = """
@nki.jit
def k_inner(x):
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=x)
    return out

k = nki.simulate(k_inner)
"""
    path, _ = kernel_file(HEADER + body)
    run = run_kernel(path, {"x": np.array([[3.0, 4.0]], np.float32)}, func="k")
    assert run.outputs.tolist() == [[3.0, 4.0]]


def test_load_matmul_transpose_and_store(kernel_file) -> None:
    # x = [[1, 2], [3, 4]], y = [[1, 0], [1, 1]]: x.T @ y = [[4, 3], [6, 4]];
    # nl.transpose(x) and nl.load_transpose2d(x) are both [[1, 3], [2, 4]].
    x = np.array([[1, 2], [3, 4]], np.float32)
    y = np.array([[1, 0], [1, 1]], np.float32)
    body = """
@nki.jit
def k(x, y):
    out = nl.ndarray((3, 2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    tx = nl.load(x)
    for i, p in enumerate([nl.matmul(tx, nl.load(y), transpose_x=True), nl.transpose(tx)]):
        s = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=s, src=p)
        nl.store(dst=out[i], value=s)
    nl.store(out[2], nl.load_transpose2d(x))
    return out
"""
    run = _run(kernel_file, body, x=x, y=y)
    assert run.outputs.tolist() == [[[4, 3], [6, 4]], [[1, 3], [2, 4]], [[1, 3], [2, 4]]]


def test_load_transpose2d_casts_to_its_dtype_and_dma_transpose_does_not(kernel_file) -> None:
    # 1 + 2^-10 is not a bf16: the cast rounds it to 1.
    x = np.array([[1.0 + 2.0**-10, 2.0], [3.0, 4.0]], np.float32)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nl.store(out, nl.load_transpose2d(x, dtype=nl.bfloat16))
    return out
"""
    path, _ = kernel_file(HEADER + body)
    run = run_kernel(path, {"x": x}, precision="native")
    assert np.asarray(run.outputs, np.float32).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    refused = body.replace(
        "nl.store(out, nl.load_transpose2d(x, dtype=nl.bfloat16))",
        "t = nl.ndarray((2, 2), dtype=nl.bfloat16, buffer=nl.sbuf)\n"
        "    nisa.dma_transpose(dst=t, src=x)\n    nl.store(out, t)",
    )
    path, _ = kernel_file(HEADER + refused)
    with pytest.raises(SimError, match="dtypes must match"):
        run_kernel(path, {"x": x})


def test_a_helper_module_beside_the_kernel_gets_the_simulated_nki(kernel_file) -> None:
    kernel_file(
        "import nki.language as nl\n\ndef twice(t):\n    return nl.multiply(t, 2.0)\n", "helper.py"
    )
    body = """
from helper import twice

@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, twice(nl.load(x)))
    return out
"""
    run = _run(kernel_file, body, x=np.array([[1.0, -2.0]], np.float32))
    assert run.outputs.tolist() == [[2.0, -4.0]]


def test_psum_fmax_is_one_bank(kernel_file) -> None:
    # The nki.language.tile_size page (Neuron SDK 2.33): psum_fmax is the "maximum free
    # dimension per PSUM bank per partition, in FP32 elements": a 2 KiB bank holds 512.
    body = """
@nki.jit
def k():
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t[0:1, 0:1], value=nl.tile_size.psum_fmax)
    nisa.memset(dst=t[0:1, 1:2], value=nl.tile_size.psum_bank_fmax)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    assert _run(kernel_file, body).outputs.tolist() == [[512.0, 512.0]]


def test_a_relative_import_loads_the_package_module_with_the_simulated_nki(
    kernel_file, tmp_path
) -> None:
    # Python's relative import: from pkg/ops/kernel.py, "..util.scale" is
    # pkg/util/scale.py; its own "import nki.language" gets the simulated module.
    for folder in ("pkg/util", "pkg/ops"):
        (tmp_path / folder).mkdir(parents=True)
    kernel_file("", "pkg/__init__.py")
    kernel_file("import nki.language as nl\n\nFACTOR = 3.0\n", "pkg/util/scale.py")
    body = """
from ..util.scale import FACTOR, nl as helper_nl

@nki.jit
def k(x):
    assert helper_nl is nl
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(x), FACTOR))
    return out
"""
    path, _ = kernel_file(HEADER + body, "pkg/ops/kernel.py")
    run = run_kernel(path, {"x": np.array([[1.0, -2.0]], np.float32)})
    assert run.outputs.tolist() == [[3.0, -6.0]]


def test_an_hbm_tensor_reshapes_as_a_view(kernel_file) -> None:
    # The nki.language.NkiTensor page: reshape is a view sharing the storage. x (2, 2, 2)
    # read as (4, 2) is rows [1, 2], [3, 4], [5, 6], [7, 8]; the doubled rows written
    # through out's (4, 2) view land in out (2, 2, 2).
    x = np.arange(1.0, 9.0, dtype=np.float32).reshape(2, 2, 2)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((4, 2), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.reshape((4, 2)))
    nisa.dma_copy(dst=out.reshape((4, 2)), src=nl.multiply(t, 2.0))
    return out
"""
    assert _run(kernel_file, body, x=x).outputs.tolist() == (2 * x).tolist()


def test_kernel_classes_the_tensor_type_and_no_reorder(kernel_file) -> None:
    # A configuration class on nl.NKIObject holds the scale 3; the loaded tile is an
    # nl.NkiTensor; inside nl.no_reorder() the kernel computes 3 x + 1 as usual.
    x = np.array([[1.0, 2.0]], np.float32)
    body = """
class Cfg(nl.NKIObject):
    scale = 3.0

    def __init__(self, bias):
        self.bias = bias


@nki.jit
def k(x):
    cfg = Cfg(1.0)
    out = nl.ndarray((1, 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 2), dtype=x.dtype, buffer=nl.sbuf)
    assert isinstance(t, nl.NkiTensor) and isinstance(cfg, nl.NKIObject)
    with nl.no_reorder():
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=cfg.scale,
                           op1=nl.add, operand1=cfg.bias)
        nisa.dma_copy(dst=out, src=t)
    return out
"""
    run = _run(kernel_file, body, x=x)
    assert run.outputs.tolist() == [[4.0, 7.0]]


def test_shared_constant_of_nki_tensor_builders(kernel_file) -> None:
    # The nki.language.shared_constant page's builders: identity(3) as bfloat16,
    # arange(0, 6, 2) -> [0, 2, 4], zeros((1, 3), int8) + 1 -> ones as int16; the
    # constants sit in HBM and are copied out with DMAs.
    body = """
import nki.tensor as ntensor

@nki.jit
def k():
    out = nl.ndarray((5, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    eye = nl.shared_constant(ntensor.identity(3, nl.float32), dtype=nl.bfloat16)
    seq = nl.shared_constant(ntensor.arange(0, 6, 2, dtype=nl.int32).reshape((1, 3)))
    ones = nl.shared_constant(ntensor.zeros((1, 3), dtype=nl.int8) + 1, dtype=nl.int16)
    assert eye.buffer == nl.shared_hbm and eye.dtype == nl.bfloat16
    assert seq.dtype == nl.int32 and ones.dtype == nl.int16
    nisa.dma_copy(dst=out[0:3, :], src=eye)
    nisa.dma_copy(dst=out[3:4, :], src=seq)
    nisa.dma_copy(dst=out[4:5, :], src=ones)
    return out
"""
    run = _run(kernel_file, body)
    expected = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 2, 4], [1, 1, 1]]
    assert run.outputs.tolist() == expected


def test_shared_constant_of_a_numpy_array_keeps_its_dtype(kernel_file) -> None:
    # Without dtype= the constant keeps the array's own dtype (float32 here).
    body = """
import numpy as np

@nki.jit
def k():
    out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    c = nl.shared_constant(np.array([[0.5, -2.0]], dtype=np.float32))
    assert c.dtype == nl.float32
    nisa.dma_copy(dst=out, src=c)
    return out
"""
    assert _run(kernel_file, body).outputs.tolist() == [[0.5, -2.0]]
