"""Example kernels, written as engineers write them, against numpy."""

from __future__ import annotations

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

KERNELS = Path(__file__).parent / "kernels"

BF16 = np.dtype(ml_dtypes.bfloat16)


def _bf16(a: np.ndarray) -> np.ndarray:
    return a.astype(BF16)


@pytest.mark.parametrize(
    "kernel", ["matmul_basic.py", "matmul_hoisted.py", "matmul_single_buffer.py"]
)
@pytest.mark.parametrize("shape", [(256, 128, 512), (128, 256, 1024)])
def test_matmul_kernels_match_numpy(kernel, shape, uniform):
    k, m, n = shape
    lhsT, rhs = _bf16(uniform((k, m), 1)), _bf16(uniform((k, n), 2))
    run = run_kernel(KERNELS / kernel, {"lhsT": lhsT, "rhs": rhs})
    expected = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    assert run.outputs.shape == (m, n)
    assert run.outputs.dtype == np.float32  # fp32 precision keeps everything in fp32
    np.testing.assert_allclose(run.outputs, expected, rtol=1e-5, atol=1e-4)
    assert run.profile["matmul_instruction_count"] == (k // 128) * (m // 128) * (n // 512)


def test_native_precision_rounds_stores_to_the_declared_dtype(uniform):
    lhsT, rhs = _bf16(uniform((256, 128), 3)), _bf16(uniform((256, 512), 4))
    exact = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    fp32 = run_kernel(KERNELS / "matmul_basic.py", {"lhsT": lhsT, "rhs": rhs})
    native = run_kernel(KERNELS / "matmul_basic.py", {"lhsT": lhsT, "rhs": rhs}, precision="native")
    assert native.outputs.dtype == BF16
    # The native result is the fp32 accumulation rounded once to bf16.
    np.testing.assert_array_equal(native.outputs, fp32.outputs.astype(BF16))
    native_err = np.abs(native.outputs.astype(np.float64) - exact).max()
    fp32_err = np.abs(fp32.outputs - exact).max()
    assert fp32_err < 1e-4 < native_err < 0.1


def test_tensore_transpose(uniform):
    x = uniform((256, 384))
    run = run_kernel(KERNELS / "transpose_tensore.py", {"x": x})
    np.testing.assert_array_equal(run.outputs, x.T)


def test_dma_transpose(uniform):
    x = uniform((96, 128))
    run = run_kernel(KERNELS / "dma_transpose.py", {"x": x})
    np.testing.assert_array_equal(run.outputs, x.T)
    assert [i.op for i in run.trace] == ["dma_transpose", "dma_copy"]


def test_elementwise_with_column_operands_and_reversed_scalar(uniform):
    x, y = uniform((128, 64), 1, low=0.5), uniform((128, 64), 2)
    scale = uniform((128, 1), 3)
    run = run_kernel(KERNELS / "elementwise.py", {"x": x, "y": y, "scale": scale}, func="axpb_relu")
    expected = np.maximum(x * y * scale + 0.5, 0.0) - 1.0 / x
    np.testing.assert_allclose(run.outputs, expected, rtol=1e-6, atol=1e-6)


def test_two_step_tensor_scalar(uniform):
    x = uniform((64, 32))
    run = run_kernel(KERNELS / "elementwise.py", {"x": x}, func="scale_shift")
    np.testing.assert_allclose(run.outputs, x * 2.0 - 3.0, rtol=1e-6)


def _gelu(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


ACTIVATIONS = {
    "copy": lambda x: x,
    "exp": np.exp,
    "relu": lambda x: np.maximum(x, 0.0),
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "gelu": _gelu,
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "square": np.square,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_functions(name, uniform):
    x = uniform((128, 48), 5, low=0.1 if name == "rsqrt" else -3.0) * (
        1.0 if name == "rsqrt" else 3.0
    )
    run = run_kernel(KERNELS / "activations.py", {"x": x}, func=f"{name}_kernel")
    np.testing.assert_allclose(
        run.outputs, ACTIVATIONS[name](x.astype(np.float64)), rtol=1e-5, atol=1e-6
    )
    assert run.trace[1].engine == "scalar"


def test_softmax_with_tile_lists_and_nested_helpers(uniform):
    x = uniform((256, 200)) * 4.0
    run = run_kernel(KERNELS / "softmax_rows.py", {"x": x})
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(run.outputs, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


def test_reductions_over_several_free_axes_and_tuple_outputs(uniform):
    x = uniform((128, 3, 40))
    run = run_kernel(KERNELS / "reduce_sum_max.py", {"x": x})
    sums, maxes = run.outputs
    np.testing.assert_allclose(sums[:, 0], x.sum(axis=(1, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(maxes, x.max(axis=2))


def test_trace_only_mode_gives_the_same_trace_and_profile(uniform):
    inputs = {"lhsT": _bf16(uniform((256, 128))), "rhs": _bf16(uniform((256, 1024)))}
    full = run_kernel(KERNELS / "matmul_hoisted.py", inputs)
    fast = run_kernel(KERNELS / "matmul_hoisted.py", inputs, compute=False)
    assert fast.outputs is None
    assert fast.trace == full.trace
    assert fast.profile == full.profile


def test_trace_only_mode_still_checks_rules(kernel_file):
    path, line = kernel_file(
        """
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def k(x):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=out, src=t)  # <-
            return out
        """
    )
    with pytest.raises(SimError) as err:
        run_kernel(path, {"x": np.zeros((4,), np.float32)}, compute=False)
    assert err.value.kind == "numerics" and err.value.line == line


def test_matmul_accumulate_flag_semantics(kernel_file, uniform):
    # accumulate=None: first write overwrites, later ones add; False overwrites.
    path, _ = kernel_file(
        """
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def k(a, b):
            out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
            at = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
            bt = nl.ndarray((128, 256), dtype=b.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=at, src=a)
            nisa.dma_copy(dst=bt, src=b)
            acc = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(acc[:, 0:128], at, bt[:, 0:128])
            nisa.nc_matmul(acc, at, bt)
            nisa.nc_matmul(acc[:, 128:256], at, bt[:, 128:256], accumulate=False)
            r = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=r, src=acc)
            nisa.dma_copy(dst=out, src=r)
            return out
        """
    )
    a, b = uniform((128, 128), 1), uniform((128, 256), 2)
    run = run_kernel(path, {"a": a, "b": b})
    prod = a.astype(np.float64).T @ b
    np.testing.assert_allclose(run.outputs[:, :128], 2 * prod[:, :128], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run.outputs[:, 128:], prod[:, 128:], rtol=1e-5, atol=1e-5)


def test_zeros_and_static_range_and_plain_range(kernel_file, uniform):
    path, _ = kernel_file(
        """
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def k(x):
            out = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.shared_hbm)
            acc = nl.zeros((128, 32), dtype=nl.float32, buffer=nl.sbuf)
            for i in nl.static_range(1, 4):
                for j in range(2):
                    t = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.dma_copy(dst=t, src=x[:, i, j * 32:(j + 1) * 32])
                    nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
            nisa.dma_copy(dst=out, src=acc)
            return out
        """
    )
    x = uniform((128, 4, 64))
    run = run_kernel(path, {"x": x})
    expected = x[:, 1:4, :32].sum(axis=1) + x[:, 1:4, 32:].sum(axis=1)
    np.testing.assert_allclose(run.outputs, expected, rtol=1e-5, atol=1e-6)
    assert run.trace[0].op == "memset"
