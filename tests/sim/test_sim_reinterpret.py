"""``t.view(dtype)``, a reinterpret cast (kernelopt.sim.reinterpret), against results
worked out by hand from the nki.language.NkiTensor page's ``view`` entry: no copy, the
bytes read in the new dtype (as numpy's ``ndarray.view``), the last dim scaled by the
ratio of the itemsizes. Little-endian, as numpy and the hardware store them."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

CURRENT = """
import nki
import nki.isa as nisa
import nki.language as nl

"""


def test_a_float32_tile_read_as_its_bytes(kernel_file) -> None:
    # 1.0 = 0x3F800000, -2.0 = 0xC0000000, 0.5 = 0x3F000000: low byte first.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((1, 12), dtype=nl.uint8, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 3), dtype=x.dtype, buffer=nl.sbuf)
    u = nl.ndarray((1, 12), dtype=nl.uint8, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_copy(dst=u, src=t.view(nl.uint8))  # <-
    nisa.dma_copy(dst=out, src=u)
    return out
"""
    path, line = kernel_file(CURRENT + body)
    run = run_kernel(path, {"x": np.array([[1.0, -2.0, 0.5]], np.float32)})
    assert run.outputs.tolist() == [[0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0, 0, 0, 0, 0x3F]]
    # The copy reads the float32 tensor's elements (the source's region), so it waits
    # for the DMA that wrote them.
    copy = next(i for i in run.trace if i.line == line)
    assert copy.reads[0][1] == ((0, 1), (0, 3))


def test_bytes_read_as_float32_and_a_slice_of_the_view(kernel_file) -> None:
    # Bytes 00 00 80 3F are 1.0, 00 00 00 C0 are -2.0; the view is (1, 2) float32 and
    # [:, 1:2] of it is the second element.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((1, 8), dtype=x.dtype, buffer=nl.sbuf)
    u = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_copy(dst=u, src=t.view(nl.float32)[:, 1:2])
    nisa.dma_copy(dst=out, src=u)
    return out
"""
    path, _ = kernel_file(CURRENT + body)
    x = np.array([[0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0]], np.uint8)
    assert run_kernel(path, {"x": x}).outputs.tolist() == [[-2.0]]


def test_writing_through_a_view_writes_the_source_bytes(kernel_file) -> None:
    # bfloat16 1.0 is 0x3F80; two of them fill a float32 element with 0x3F803F80,
    # which is 1 + 0x3F80 / 2**23 = 1 + 16256 / 8388608.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t.view(nl.bfloat16), value=1.0)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    path, _ = kernel_file(CURRENT + body)
    run = run_kernel(path, {"x": np.zeros((2, 2), np.float32)})
    assert run.outputs.tolist() == [[1 + 16256 / 8388608] * 2] * 2


def test_beta1_float32_column_stored_as_four_fp8_bytes(kernel_file) -> None:
    # As nki-samples' rmsnorm_quant stores its fp32 dequantisation scale: the [P, 1]
    # float32 column read as [P, 4] float8_e4m3 and DMA'd into an fp8 HBM tensor.
    # 2.0 = 0x40000000: bytes 00 00 00 40; 0x40 as e4m3 is 2.0, 0x00 is 0.0.
    body = """
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray((2, 4), dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
    col = nl.ndarray((2, 1), dtype=nl.float32, buffer=nl.sbuf)
    col[...] = nl.load(x)
    i_p, i_f = nl.mgrid[0:2, 0:4]
    nisa.dma_copy(dst=out[i_p, i_f], src=col.view(nl.float8_e4m3)[i_p, i_f])
    return out
"""
    path, _ = kernel_file(body)
    run = run_kernel(path, {"x": np.array([[2.0], [2.0]], np.float32)})
    assert run.outputs.tolist() == [[0.0, 0.0, 0.0, 2.0]] * 2
    fp8 = np.asarray(run.outputs).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert fp8.tolist() == [[0, 0, 0, 0x40]] * 2


@pytest.mark.parametrize(
    ("view", "message"),
    [
        ("t.permute((0, 2, 1)).view(nl.uint8)", "cannot be reinterpreted"),
        ("t[:, :, 1:2].view(nl.int32)", "does not divide"),
    ],
)
def test_casts_the_page_forbids_are_refused(kernel_file, view, message) -> None:
    body = f"""
@nki.jit
def k(x):
    out = nl.ndarray((2, 3, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, 3, 4), dtype=nl.uint16, buffer=nl.sbuf)
    v = {view}
    return out
"""
    path, _ = kernel_file(CURRENT + body)
    with pytest.raises(SimError, match=message):
        run_kernel(path, {"x": np.zeros((2, 3, 4), np.float32)})
