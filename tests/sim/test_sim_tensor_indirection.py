"""``data.indirect(index, num_elem=)``, Tensor Indirection, against results worked out
from the nki.language.NkiTensor page's ``indirect`` entry and the nki-samples
tensor-indirection tutorial: output ``[p, i]`` is ``data[p, index[g + i % 16, i // 16]]``
with ``g`` the first partition of ``p``'s 16-partition group."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

KERNEL = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(data, index):
    p, n = data.shape[0], {num_elem}
    out = nl.ndarray((p, n), dtype=data.dtype, buffer=nl.shared_hbm)
    d = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
    idx = nl.ndarray(index.shape, dtype=nl.uint16, buffer=nl.sbuf)
    r = nl.ndarray((p, n), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=d, src=data)
    nisa.dma_copy(dst=idx, src=index)
    nisa.tensor_copy(dst=r, src=d.indirect(idx, num_elem={num_elem}))  # <-
    nisa.dma_copy(dst=out, src=r)
    return out
"""


def _data() -> np.ndarray:
    # data[p, j] = 100 p + j: a value names its row and column.
    return (100 * np.arange(32)[:, None] + np.arange(8)[None, :]).astype(np.float32)


def test_each_group_reads_its_own_offsets_column_by_column(kernel_file) -> None:
    # Two 16-partition groups, two offset columns. Group 0 holds offsets (r + 1) % 8 in
    # column 0 and 7 in column 1; group 1 holds 0 and (r % 3).
    index = np.zeros((32, 2), np.uint16)
    index[:16, 0] = (np.arange(16) + 1) % 8
    index[:16, 1] = 7
    index[16:, 0] = 0
    index[16:, 1] = np.arange(16) % 3
    path, line = kernel_file(KERNEL.format(num_elem=20))
    run = run_kernel(path, {"data": _data(), "index": index})
    out = np.asarray(run.outputs)
    # Row 5 (group 0): columns 0..15 read offsets (i + 1) % 8, columns 16..19 offset 7.
    assert out[5].tolist() == [500 + (i + 1) % 8 for i in range(16)] + [507] * 4
    # Row 20 (group 1): columns 0..15 read offset 0, columns 16..19 offsets 0, 1, 2, 0.
    assert out[20].tolist() == [2000] * 16 + [2000, 2001, 2002, 2000]
    expected = np.array(
        [
            [_data()[p, index[16 * (p // 16) + i % 16, i // 16]] for i in range(20)]
            for p in range(32)
        ]
    )
    np.testing.assert_array_equal(out, expected)
    # The copy waits for the index tile as well as the data.
    copy = next(i for i in run.trace if i.line == line)
    assert len(copy.reads) == 2


def test_offsets_past_the_row_are_refused(kernel_file) -> None:
    index = np.full((32, 1), 8, np.uint16)
    path, _ = kernel_file(KERNEL.format(num_elem=16))
    with pytest.raises(SimError, match="outside"):
        run_kernel(path, {"data": _data(), "index": index})


def test_more_offsets_than_the_index_holds_are_refused(kernel_file) -> None:
    index = np.zeros((32, 1), np.uint16)
    path, _ = kernel_file(KERNEL.format(num_elem=17))
    with pytest.raises(SimError, match="num_elem=17"):
        run_kernel(path, {"data": _data(), "index": index})
