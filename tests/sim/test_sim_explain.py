"""What bounds a kernel's time, and the stalls an engineer would fix next."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from kernelopt.sim import run_kernel
from kernelopt.sim.cli import sim_command
from kernelopt.sim.explain import ENGINE_NAMES

BF16 = np.dtype(ml_dtypes.bfloat16)

# Resident operands, loaded or (no DMA at all) set on chip; one PSUM tile
# or two alternating ones.
RESIDENT = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.ndarray((128, KT, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    b = nl.ndarray((128, KT, N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        {fill}
    accs = [nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range({banks})]
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = accs[(m * (N // 512) + n) % {banks}]
            nisa.memset(dst=acc, value=0.0)  # <- memset
            for k in nl.affine_range(KT):
                nisa.nc_matmul(
                    dst=acc,
                    stationary=a[:, k, m * 128 : (m + 1) * 128],
                    moving=b[:, k, n * 512 : (n + 1) * 512],
                )
            res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)  # <- drain
            nisa.dma_copy(dst=out[m * 128 : (m + 1) * 128, n * 512 : (n + 1) * 512], src=res)
    return out
"""


def _lines(source: str) -> dict[str, int]:
    return {
        line.split("# <- ")[1]: i
        for i, line in enumerate(source.lstrip("\n").splitlines(), 1)
        if "# <- " in line
    }


LOAD = """nisa.dma_copy(dst=a[:, k, :], src=lhsT[k * 128 : (k + 1) * 128, :])
        nisa.dma_copy(dst=b[:, k, :], src=rhs[k * 128 : (k + 1) * 128, :])"""
SET = """nisa.memset(dst=a[:, k, :], value=1.0)
        nisa.memset(dst=b[:, k, :], value=1.0)"""


def _run(kernel_file, banks: int, k: int = 1024, fill: str = SET, **kw):
    source = RESIDENT.format(banks=banks, fill=fill)
    path, _ = kernel_file(source, name=f"resident{banks}.py")
    inputs = {"lhsT": np.zeros((k, 512), BF16), "rhs": np.zeros((k, 2048), BF16)}
    return run_kernel(path, inputs, compute=False, **kw), _lines(source), path


def test_one_psum_tile_is_a_dependency_chain_through_memset_and_drain(kernel_file):
    run, lines, _ = _run(kernel_file, banks=1)
    explanation = run.explain()
    assert explanation.bound_by == "dependency chain"
    first = explanation.stalls[0]
    assert (first.op, first.waits_for_op, first.waits_for_line) == (
        "nc_matmul",
        "memset",
        lines["memset"],
    )
    # ... and the memset waited for the drain to read the one PSUM tile.
    assert (first.then_op, first.then_line, first.then_dependency) == (
        "tensor_copy",
        lines["drain"],
        "war",
    )
    assert "which waits for tensor_copy" in first.describe()


def test_two_psum_tiles_remove_the_memset_chain(kernel_file):
    one, _, _ = _run(kernel_file, banks=1)
    two, _, _ = _run(kernel_file, banks=2)

    def chained(run) -> float:
        stalls = run.explain(top=10).stalls
        return sum(s.idle_s for s in stalls if s.then_dependency == "war")

    # One PSUM tile: every output tile's matmuls wait for the memset, which
    # waits for the previous drain. Two: the chain overlaps the other tile's
    # matmuls and only its excess over them shows.
    assert chained(one) > 5e-6
    assert chained(two) < 0.25 * chained(one)


def test_a_compute_bound_kernel_is_bound_by_the_tensor_engine():
    kernel = Path(__file__).parent / "kernels" / "matmul_blocked.py"
    inputs = {"lhsT": np.zeros((2048, 2048), BF16), "rhs": np.zeros((2048, 2048), BF16)}
    explanation = run_kernel(kernel, inputs, compute=False).explain()
    assert explanation.bound_by == "tensor"
    assert explanation.bound.startswith("tensor engine busy")


def test_the_critical_path_covers_the_whole_time(kernel_file):
    for banks in (1, 2):
        run, _, _ = _run(kernel_file, banks=banks)
        path = run.explain().critical_path_s
        assert sum(path.values()) == pytest.approx(run.profile["total_time"], rel=1e-6)


def test_a_load_bound_kernel_is_bound_by_dma(kernel_file):
    # One output tile per K x (128 + 512) operand block: the loads dominate.
    source = RESIDENT.format(banks=2, fill=LOAD).replace("M // 128", "1").replace("N // 512", "1")
    path, _ = kernel_file(source, name="loads.py")
    run = run_kernel(
        path,
        {"lhsT": np.zeros((4096, 128), BF16), "rhs": np.zeros((4096, 512), BF16)},
        compute=False,
    )
    assert run.explain().bound_by == "dma"


def test_active_times_use_the_profiler_names(kernel_file):
    run, _, _ = _run(kernel_file, banks=2)
    p = run.profile
    for field in ("tensor_engine", "vector_engine", "scalar_engine", "gpsimd_engine", "dma"):
        seconds = p[f"{field}_active_time"]
        assert seconds == pytest.approx(p[f"{field}_active_time_percent"] / 100 * p["total_time"])
    assert p["tensor_engine_active_time"] > 0 and p["mbu_estimated_percent"] > 0


def test_by_line_spans_show_when_each_source_line_ran(kernel_file):
    # K=512: four matmuls per (m, n) tile, 4 x 4 tiles; one PSUM tile, so each
    # tile's drain runs after its matmuls and before the next tile's memset.
    run, lines, _ = _run(kernel_file, banks=1, k=512, fill=LOAD)
    explanation = run.explain()
    spans = {s.line: s for s in explanation.by_line}
    memset, drain = spans[lines["memset"]], spans[lines["drain"]]
    matmul = next(s for s in explanation.by_line if s.op == "nc_matmul")
    assert (memset.count, matmul.count, drain.count) == (16, 64, 16)
    assert (matmul.engine, memset.op, drain.op) == ("tensor", "memset", "tensor_copy")
    assert drain.first_start_s >= matmul.first_start_s
    assert drain.last_end_s >= matmul.last_end_s
    for span in explanation.by_line:
        assert 0 <= span.first_start_s < span.last_end_s <= run.timeline.makespan_ns * 1e-9
        if span.engine != "dma":  # one engine runs one instruction at a time
            assert span.busy_s <= span.last_end_s - span.first_start_s + 1e-12
            assert f"busy {span.busy_s * 1e6:.2f} us" in span.describe()
        else:  # 16 queues: transfers overlap, so their sum is time in flight, not busy
            assert "in flight (summed over queues)" in span.describe()
    starts = [s.first_start_s for s in explanation.by_line]
    assert starts == sorted(starts)
    total = sum(s.count for s in explanation.by_line)
    assert total == len(run.trace)
    again = type(explanation).from_json(json.loads(json.dumps(explanation.to_json())))
    assert again == explanation


def test_sim_cli_explains_in_text_and_json(kernel_file, tmp_path):
    _, lines, path = _run(kernel_file, banks=1, k=512, fill=LOAD)
    workload = tmp_path / "w.py"
    workload.write_text(
        "INPUT_SPECS = {'lhsT': ((512, 512), 'bfloat16'), 'rhs': ((512, 2048), 'bfloat16')}\n"
        "def f_numpy(lhsT, rhs):\n    return lhsT.T @ rhs\n"
    )
    text = CliRunner().invoke(sim_command, [str(path), "--workload", str(workload), "--explain"])
    assert text.exit_code == 0, text.output
    assert "explain:" in text.output and "bound: a dependency chain" in text.output
    assert f"memset at line {lines['memset']}" in text.output
    assert "by line (first start -> last end):" in text.output
    assert f"line {lines['drain']} tensor_copy" in text.output
    result = CliRunner().invoke(
        sim_command, [str(path), "--workload", str(workload), "--explain", "--json"]
    )
    record = json.loads(result.output)
    assert record["explain"]["bound_by"] == "dependency chain"
    assert record["explain"]["stalls"][0]["waits_for_line"] == lines["memset"]
    plain = json.loads(
        CliRunner().invoke(sim_command, [str(path), "--workload", str(workload), "--json"]).output
    )
    assert "explain" not in plain


CHAIN = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[i * 128 : (i + 1) * 128, :])
        m = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=m, op=nl.maximum, data=t, axis=1, negate=True)
        e = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=e, op=nl.exp, data=t, bias=m)  # <- exp
        nisa.dma_copy(dst=out[i * 128 : (i + 1) * 128, :], src=e)
    return out
"""


def test_without_matmuls_the_stalls_name_the_engine_that_stood_idle(kernel_file):
    # No TensorE work: the stalls are the bounding engine's, and say so.
    path, _ = kernel_file(CHAIN, name="chain.py")
    run = run_kernel(path, {"x": np.zeros((512, 2048), BF16)}, compute=False)
    explained = run.explain()
    assert explained.stalls
    engines = {s.engine for s in explained.stalls}
    assert "tensor" not in engines
    for stall in explained.stalls:
        assert stall.describe().startswith(f"{ENGINE_NAMES[stall.engine]} idle")
