"""The current API's ``NkiTensor`` view methods (the nki.language.NkiTensor reference
page, Trn2/Trn3), each against a hand-computed result: views share the tensor's
storage, so reading one reads the tensor's elements in the view's order and writing
one writes them."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

HEADER = """
import nki
import nki.isa as nisa
import nki.language as nl

"""


def _run(kernel_file, body: str, **inputs: np.ndarray):
    path, _ = kernel_file(HEADER + body)
    return run_kernel(path, inputs)


def _copy_kernel(shape: tuple[int, ...], out_shape: tuple[int, ...], view: str) -> str:
    """A kernel loading x into an SBUF tensor t of ``shape`` and returning ``view`` of t."""
    return f"""
@nki.jit
def k(x):
    out = nl.ndarray({out_shape}, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray({shape}, dtype=x.dtype, buffer=nl.sbuf)
    u = nl.ndarray({out_shape}, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_copy(dst=u, src={view})
    nisa.dma_copy(dst=out, src=u)
    return out
"""


def test_permute_reorders_the_free_dims(kernel_file) -> None:
    # t[p, i, j] = 6 p + 3 i + j; the view's [p, j, i] is t[p, i, j].
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    run = _run(kernel_file, _copy_kernel((2, 2, 3), (2, 3, 2), "t.permute((0, 2, 1))"), x=x)
    assert run.outputs.tolist() == [
        [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]],
        [[6.0, 9.0], [7.0, 10.0], [8.0, 11.0]],
    ]


def test_an_hbm_tensor_may_be_permuted_whole(kernel_file) -> None:
    # x (2, 3) read as (3, 2): its transpose.
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((3, 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((3, 2), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.permute((1, 0)))
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    run = _run(kernel_file, body, x=x)
    assert run.outputs.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


@pytest.mark.parametrize(
    ("view", "out_shape", "expected"),
    [
        # t[p, i, j] = 12 p + 4 i + j.
        ("t.select(1, 2)", (2, 4), [[8, 9, 10, 11], [20, 21, 22, 23]]),
        ("t.slice(2, 0, 4, 2).select(1, 1)", (2, 2), [[4, 6], [16, 18]]),
        ("t[:, 1, 1:4:2]", (2, 2), [[5, 7], [17, 19]]),
        ("t.permute((0, 2, 1))[:, 3, 0:2]", (2, 2), [[3, 7], [15, 19]]),
    ],
)
def test_select_slice_and_strided_indexing(kernel_file, view, out_shape, expected) -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    run = _run(kernel_file, _copy_kernel((2, 3, 4), out_shape, view), x=x)
    assert run.outputs.tolist() == expected


def test_expand_broadcast_and_squeeze(kernel_file) -> None:
    # [[0, 1, 2], [3, 4, 5]] as (2, 1, 3), repeated along dim 1, then a size-1 dim
    # added at the end and taken off again.
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    view = "t.expand_dim(1).broadcast(1, 2).expand_dim(3).squeeze_dim(3)"
    run = _run(kernel_file, _copy_kernel((2, 3), (2, 2, 3), view), x=x)
    assert run.outputs.tolist() == [
        [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]],
        [[3.0, 4.0, 5.0], [3.0, 4.0, 5.0]],
    ]


@pytest.mark.parametrize(
    ("view", "out_shape", "expected_row0"),
    [
        # t[0] = [[0, 1, 2], [3, 4, 5]].
        ("t.flatten_dims(1, 2)", (2, 6), [0, 1, 2, 3, 4, 5]),
        ("t.reshape((2, 6)).reshape_dim(1, (3, -1))", (2, 3, 2), [[0, 1], [2, 3], [4, 5]]),
        # (b, (h w)) with h = 2: the view's [b, w, h] is element h * 3 + w of row b.
        (
            "t.reshape((2, 6)).rearrange(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 2})",
            (2, 3, 2),
            [[0, 3], [1, 4], [2, 5]],
        ),
    ],
)
def test_dims_are_merged_and_split(kernel_file, view, out_shape, expected_row0) -> None:
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    run = _run(kernel_file, _copy_kernel((2, 2, 3), out_shape, view), x=x)
    assert run.outputs[0].tolist() == expected_row0
    assert run.outputs[1].reshape(-1).min() == 6.0


def test_writing_through_a_view_writes_the_tensor(kernel_file) -> None:
    # u.permute((0, 2, 1)) receives t (2, 3, 2): u[p, i, j] = t[p, j, i].
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((2, 2, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, 3, 2), dtype=x.dtype, buffer=nl.sbuf)
    u = nl.ndarray((2, 2, 3), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_copy(dst=u.permute((0, 2, 1)), src=t)
    nisa.dma_copy(dst=out, src=u)
    return out
"""
    run = _run(kernel_file, body, x=x)
    assert run.outputs[0].tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


def test_is_contiguous(kernel_file) -> None:
    # Whole tensor and a select: contiguous; a permute and a strided slice: not.
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((4, 2, 3), dtype=nl.float32, buffer=nl.sbuf)
    flags = nl.ndarray((1, 4), dtype=nl.float32, buffer=nl.sbuf)
    views = [t, t.select(1, 1), t.permute((0, 2, 1)), t.slice(2, 0, 3, 2)]
    for i in range(4):
        nisa.memset(dst=flags[:, i : i + 1], value=1.0 if views[i].is_contiguous() else 0.0)
    nisa.dma_copy(dst=out, src=flags)
    return out
"""
    run = _run(kernel_file, body, x=np.zeros((1, 1), np.float32))
    assert run.outputs.tolist() == [[1.0, 1.0, 0.0, 0.0]]


@pytest.mark.parametrize(
    ("view", "message"),
    [
        ("t.permute((1, 0, 2))", "dims\\[0\\] must be 0"),
        ("t.expand_dim(0)", "partition dimension"),
        ("t.permute((0, 2, 1)).flatten_dims(1, 2)", "not contiguous"),
        ("t.permute((0, 2, 1)).reshape((2, 12))", "not contiguous"),
        ("t.broadcast(1, 4)", "has size 3, not 1"),
        ("t.select(2, 4)", "index 4 out of range"),
        ("t.slice(1, 2, 2)", "slice \\[2:2:1\\]"),
        ("t.permute((0, 2, 1)).view(nl.int32)", "cannot be reinterpreted"),
    ],
)
def test_views_the_page_forbids_are_refused(kernel_file, view, message) -> None:
    body = f"""
@nki.jit
def k(x):
    out = nl.ndarray((2, 3, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((2, 3, 4), dtype=x.dtype, buffer=nl.sbuf)
    v = {view}
    return out
"""
    with pytest.raises(SimError, match=message):
        _run(kernel_file, body, x=np.zeros((2, 3, 4), np.float32))
