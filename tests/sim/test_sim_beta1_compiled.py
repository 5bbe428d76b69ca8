"""A partition broadcast read from its PSUM bank, and tensor_tensor's documented N cycles
with a PSUM operand: what the NKI fused Mamba tutorial's ladder on Trn1 shows of the
compiled kernels (docs/sim.md, "The NKI fused Mamba tutorial's ladder")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernelopt.sim import run_kernel
from kernelopt.sim.chips import chip_params
from kernelopt.sim.cost import duration_ns

KERNELS = Path(__file__).parent / "kernels" / "beta1"
TRN1 = chip_params("trn1")


def _broadcast_run(cols: int, rows_too: bool = False):
    """x * row (the row broadcast across partitions); with ``rows_too``, also x * x."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, cols)).astype(np.float32)
    row = rng.standard_normal((1, cols)).astype(np.float32)
    run = run_kernel(
        KERNELS / "broadcast_rows.py",
        {"x": x, "row": row},
        params=TRN1,
        kernel_kwargs={"square_too": rows_too},
    )
    expected = x * row * (x if rows_too else 1.0)
    np.testing.assert_allclose(run.outputs, expected, rtol=1e-5)
    return run


def test_a_broadcast_that_fits_one_bank_is_read_from_psum_without_a_copy() -> None:
    run = _broadcast_run(512)
    assert [i.op for i in run.trace if i.engine in ("tensor", "scalar", "vector")] == [
        "nc_matmul",
        "tensor_tensor",
    ]
    (product,) = [i for i in run.trace if i.op == "tensor_tensor"]
    kinds = {a.alloc_id: a.kind for a in run.allocations}
    assert "psum" in {kinds[aid] for aid, _ in product.reads}


def test_a_wider_broadcast_goes_bank_by_bank_through_scalar_copies() -> None:
    run = _broadcast_run(1024)
    assert [i.op for i in run.trace if i.engine == "tensor"] == ["nc_matmul", "nc_matmul"]
    assert len([i for i in run.trace if i.engine == "scalar"]) == 2


def test_tensor_tensor_with_a_psum_operand_costs_n_cycles_with_two_sbuf_inputs_2n() -> None:
    """NEURON.md: N cycles for one input, 2N for two, tensor_tensor N when one input is
    in PSUM; ~100 static cycles each. The PSUM read is in that N, not charged again."""
    run = _broadcast_run(512, rows_too=True)
    by_psum = {
        any(a.kind == "psum" for a in run.allocations if a.alloc_id in {r[0] for r in i.reads}): i
        for i in run.trace
        if i.op == "tensor_tensor"
    }
    static, ns = TRN1.engine_static_cycles, 1e9 / TRN1.vector_clock_hz
    assert duration_ns(by_psum[True], TRN1) == pytest.approx((static + 512) * ns)
    assert duration_ns(by_psum[False], TRN1) == pytest.approx((static + 2 * 512) * ns)
