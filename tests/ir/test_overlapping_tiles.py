"""A parallel dim whose size has no good divisor (a prime row count such as 257) takes
overlapping tiles: three tiles of 87 rows at 0, 85 and 170, not 257 tiles of one row.
The overlap's rows are computed twice and stored twice with the same values; a
reducing dim keeps whole divisors, since an overlap there would be summed twice."""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from ir_support import variant_failures

from kernelopt.ir import REWRITES, build_ir, enumerate_rewrite_combinations, render_ir, sample
from kernelopt.ir.build import _dim
from kernelopt.ir.describe import describe
from kernelopt.ir.model import Dim
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

HEAD = """import numpy as np
from kernelopt.ir import (NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar,
                          NKITranspose)
"""

# The rms norm -> matmul with a prime number of rows.
RMS_MATMUL_257 = """
def f_nkigym(x, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt")(
        data=NKITensorScalar(op0="multiply", operand0=1.0 / 256, op1="add", operand1=1e-6)(data=ss)
    )
    xn = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    return NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)

def f_numpy(x, w):
    x = x.astype(np.float32)
    return (x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6)) @ w.astype(np.float32)

INPUT_SPECS = {"x": ((257, 256), "bfloat16"), "w": ((256, 128), "bfloat16")}
"""

# Both overlapped dims on the free axis of an HBM tensor: xT's 257 columns (M) and
# w's and the output's 521 columns (N, at most 512 per instruction).
TRANSPOSED_INPUT_GELU = """
def f_nkigym(xT, w):
    return NKIActivation(op="gelu")(data=NKIMatmul()(stationary=xT, moving=w))

def f_numpy(xT, w):
    h = xT.astype(np.float32).T @ w.astype(np.float32)
    return 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))

INPUT_SPECS = {"xT": ((128, 257), "bfloat16"), "w": ((128, 521), "bfloat16")}
"""


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(HEAD + body)
    return path


def test_a_prime_row_count_takes_three_overlapping_tiles_not_257_of_one() -> None:
    rows = _dim("d0", 257, 128, reducing=False)
    assert (rows.tile, rows.stride, rows.num_tiles) == (87, 85, 3)
    assert (rows.num_tiles - 1) * rows.step + rows.tile == 257  # the last tile ends at 257
    wide = _dim("d2", 1009, 512, reducing=False)
    assert (wide.tile, wide.stride, wide.num_tiles) == (505, 504, 2)


def test_reducing_dims_and_good_divisors_keep_whole_tiles() -> None:
    # An overlap would be summed twice along a reduction.
    assert _dim("d1", 257, 128, reducing=True) == Dim("d1", 257, 1, True)
    # 1376 = 16 x 86: a divisor over half the limit stays (no stride, no duplicated rows).
    assert _dim("d0", 1376, 128, reducing=False).stride == 0
    assert _dim("d0", 384, 128, reducing=False).tile == 128


@settings(max_examples=200, deadline=None)
@given(size=st.integers(2, 6000), limit=st.sampled_from([128, 512]))
def test_overlapping_tiles_cover_the_dim_exactly_with_fewer_tiles(size: int, limit: int) -> None:
    dim = _dim("d0", size, limit, reducing=False)
    assert dim.tile <= limit
    if dim.stride:
        assert 0 < dim.stride <= dim.tile  # no gap between tiles
        assert (dim.num_tiles - 1) * dim.stride + dim.tile == size
        divisor = next(t for t in range(limit, 0, -1) if size % t == 0)
        assert dim.num_tiles < size // divisor
    else:
        assert size % dim.tile == 0


def test_ir_show_names_the_stride(tmp_path: Path) -> None:
    w = load_workload(_write(tmp_path, "rms_matmul_257", RMS_MATMUL_257))
    text = describe(build_ir(w.f_nkigym, w.input_specs, name="rms_matmul_257"))
    assert "size=257 tile=87 num_tiles=3 stride=85 (overlapping tiles)" in text


def test_every_variant_of_a_prime_row_count_renders_correct_kernels(tmp_path: Path) -> None:
    path = _write(tmp_path, "rms_matmul_257", RMS_MATMUL_257)
    checked, failures = variant_failures(path, "rms_matmul_257", seeds=1)
    assert checked >= 8
    assert failures == []


def test_overlapped_free_dims_load_and_store_one_tile_per_transfer(tmp_path: Path) -> None:
    path = _write(tmp_path, "xt_gelu", TRANSPOSED_INPUT_GELU)
    w = load_workload(path)
    base = build_ir(w.f_nkigym, w.input_specs, name="xt_gelu")
    for api in ("nki", "beta1"):
        for variant, ir in enumerate_rewrite_combinations(base, list(REWRITES.values())):
            for seed in range(3):
                source = render_ir(sample(ir, random.Random(seed)), api=api)
                # The HBM offsets step by the stride, 85 and 260, never by the tile.
                assert "* 85" in source and "* 260" in source, source
                kernel = tmp_path / f"{api}_{variant}_{seed}.py"
                kernel.write_text(source)
                report = check_kernel(kernel, w)
                assert report.correct, f"{api} {variant} seed {seed}: {report.error}"


def test_sim_check_counts_the_workloads_macs_not_the_repeated_rows(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kernelopt.sim.cli import sim_command

    path = _write(tmp_path, "rms_matmul_257", RMS_MATMUL_257)
    w = load_workload(path)
    ir = build_ir(w.f_nkigym, w.input_specs, name="rms_matmul_257")
    kernel = tmp_path / "kernel.py"
    kernel.write_text(render_ir(sample(ir, random.Random(0))))
    result = CliRunner().invoke(sim_command, [str(kernel), "--workload", str(path), "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["mac_count"] == 257 * 256 * 128  # the math's; the kernel runs 261 rows
    assert record["hfu_estimated_percent"] > record["mfu_estimated_percent"] > 0


def test_ir_show_says_a_reducing_dim_without_a_good_divisor_is_slow(tmp_path: Path) -> None:
    # K = 257 is contracted: no overlap is allowed there, so it is reduced one row at a time.
    body = RMS_MATMUL_257.replace("(257, 256)", "(128, 257)").replace("(256, 128)", "(257, 128)")
    w = load_workload(_write(tmp_path, "k257", body.replace("1.0 / 256", "1.0 / 257")))
    text = describe(build_ir(w.f_nkigym, w.input_specs, name="k257"))
    assert "size=257 tile=1 num_tiles=257 (reducing)" in text
    assert "note: 257 has no divisor from 32 to 128, so d1 is reduced 1 at a time" in text
    assert text.count("note:") == 1  # the parallel dims say nothing
