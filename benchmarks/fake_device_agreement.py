"""How far kernelopt's cost model is from the fake Trn2 device, kernel by kernel.

    python benchmarks/fake_device_agreement.py [--states 24] [--no-tutorial]
                                               [--no-scoreboard] [--json]

The fake device (kernelopt/testing/fake_trn2/timing.py) times a kernel's
instruction stream with mechanisms, a memory plan and a PSUM lowering of its
own; the model is the simulator as it stands (kernelopt.sim, default
parameters). Both see the same traced kernel. The kernels: the Trn2 calibration kernels timed on the device
(benchmarks/calibration, with the compiler options each was measured with;
the Trn1 cases are another chip), the matmul kernels of tests/sim/kernels at
2048^3 bf16, and ``--states`` KernelIR knob states of ir/matmul
(programs/matmul.md), drawn with a fixed seed over every rewrite
combination. Printed per kernel: model MFU, device MFU (noise-free) and the
difference; then Spearman's rho over all kernels, the mean absolute
difference, and the same over mid-range kernels (device MFU 55-80 %). For
the calibration kernels the public Trn2 figure is printed beside them: the
device stands in for that hardware, so it should be near it where the model
is (the model was calibrated on exactly these kernels).

The host-timed GEMM scoreboard (20 shapes) is printed apart: its public
times include a per-execution host cost that is not published, so what is
compared is the gap public minus device per shape, which should be one
constant per runner (its spread is the device's error there), beside the
same gap for the model.

Public figures the device is calibrated to (SIM-CALIBRATION.md): on real
Trn2 the model ranks held-out kernels with rho about 0.8 and reads
mid-range kernels 7-12 pp off.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from kernelopt.sim import DEFAULT_PARAMS, SimError  # noqa: E402
from kernelopt.sim.calibrate import spearman, trace_kernel  # noqa: E402
from kernelopt.testing.fake_trn2 import hardware  # noqa: E402
from kernelopt.workload import load_workload  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "benchmarks" / "calibration"
SIM_KERNELS = ROOT / "tests" / "sim" / "kernels"
MATMUL_IR = ROOT / "ir" / "matmul" / "workload.py"
TEST_MATMULS = (
    "matmul_basic.py",
    "matmul_blocked.py",
    "matmul_hoisted.py",
    "matmul_single_buffer.py",
)
MID_RANGE = (55.0, 80.0)


def _cases():
    spec = importlib.util.spec_from_file_location(
        "kernelopt_agreement_cases", CALIBRATION / "cases.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.CASES


def kernels(states: int, tutorial: bool) -> list[tuple]:
    """(name, kernel file, workload file, compiler options, public MFU or None)
    of every kernel compared."""
    out = []
    for case in _cases():
        # The device is a Trn2 NeuronCore timed on the device: Trn1 cases are another
        # chip, and host-timed ones (the scoreboard) are compared in ``scoreboard``.
        if case.chip != "trn2" or case.timing.host:
            continue
        # Run at the workload's own shape and arguments: a case measured at others
        # (attention at 16k, rung 3's pipelining variants) is not this kernel.
        if case.shapes or case.kernel_kwargs:
            continue
        if not tutorial and "tutorial" in case.kernel:
            continue
        out.append(
            (
                case.kernel[:-3],
                CALIBRATION / case.kernel,
                CALIBRATION / case.workload,
                tuple(case.compiler_args),
                case.measured_mfu,
            )
        )
    for name in TEST_MATMULS:
        out.append(
            (
                f"tests/{name[:-3]}",
                SIM_KERNELS / name,
                CALIBRATION / "workload_lhsT_rhs.py",
                (),
                None,
            )
        )
    if states:
        out.extend(_ir_states(states))
    return out


def _ir_states(count: int) -> list[tuple]:
    """``count`` distinct knob states of ir/matmul that compile (fit in SBUF and
    PSUM), drawn with a fixed seed."""
    import tempfile

    from kernelopt.ir import ir_for_workload, render_ir, sample
    from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations

    base = ir_for_workload(MATMUL_IR)
    variants = [ir for _, ir in enumerate_rewrite_combinations(base, list(REWRITES.values()))]
    rng = random.Random(20261125)
    folder = Path(tempfile.mkdtemp(prefix="kernelopt-agreement-"))
    workload = load_workload(MATMUL_IR, require=("f_numpy", "INPUT_SPECS"))
    seen: set[str] = set()
    out: list[tuple] = []
    for _ in range(count * 40):
        source = render_ir(sample(rng.choice(variants), rng))
        if source in seen:
            continue
        seen.add(source)
        path = folder / f"state{len(out):02d}.py"
        path.write_text(source)
        try:
            trace_kernel(0, 0.0, path, workload, None, ())
        except SimError:
            continue
        out.append((f"ir/matmul state {len(out):02d}", path, MATMUL_IR, (), None))
        if len(out) == count:
            break
    return out


def compare(entries) -> list[dict]:
    rows = []
    for name, kernel, workload_path, options, public in entries:
        workload = load_workload(workload_path, require=("f_numpy", "INPUT_SPECS"))
        try:
            traced = trace_kernel(0, 0.0, kernel, workload, None, options)
        except SimError as error:
            rows.append({"kernel": name, "error": str(error).splitlines()[0]})
            continue
        model = traced.mfu(DEFAULT_PARAMS)
        device = hardware.traced_mfu(traced)
        rows.append(
            {
                "kernel": name,
                "model": model,
                "device": device,
                "diff": model - device,
                "public": public,
            }
        )
    return rows


def scoreboard() -> list[dict]:
    """The host-timed Trn2 cases (nki-autotune's GEMM scoreboard, 512^3 to 5120^3):
    model and device time of each, and the public time, which includes the host's
    cost of launching and waiting for each execution (cases.py, ``SPIKE_HOST``)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    from sim_calibration import trace_case

    rows = []
    for case in _cases():
        if case.chip != "trn2" or not case.timing.host:
            continue
        traced = trace_case(case)
        device = hardware.device_profile(
            traced.trace,
            traced.allocations,
            fp32_inputs=traced.fp32_inputs,
            scheduler_on=not traced.in_order,
        )
        rows.append(
            {
                "kernel": case.label,
                "family": case.family,
                "model_ms": traced.device_ms(DEFAULT_PARAMS),
                "device_ms": device["total_time"] * 1e3,
                "public_ms": case.measured_ms,
            }
        )
    return rows


def host_gaps(rows: list[dict]) -> dict:
    """Per scoreboard family: public minus device (and minus model) time in us. A
    source timed from the host adds one per-execution cost to every kernel, so the
    gap of a device that stands for the hardware is the same at every shape: its
    spread is the device's error there (the host cost itself is not published)."""
    out = {}
    for family in sorted({r["family"] for r in rows}):
        members = [r for r in rows if r["family"] == family]
        out[family] = {
            f"{who}_gap_us_{stat}": fn([1e3 * (r["public_ms"] - r[f"{who}_ms"]) for r in members])
            for who in ("device", "model")
            for stat, fn in (("median", statistics.median), ("sd", statistics.pstdev))
        }
    return out


def summary(rows: list[dict], groups: bool = True) -> dict:
    ok = [r for r in rows if "error" not in r]
    mid = [r for r in ok if MID_RANGE[0] <= r["device"] <= MID_RANGE[1]]
    public = [r for r in ok if r.get("public") is not None]
    extra: dict = {}
    if groups:
        states = [r for r in ok if r["kernel"].startswith("ir/")]
        extra["ir_states"] = summary(states, False) if len(states) > 1 else None
        extra["device_vs_public_mean_abs_pp"] = (
            statistics.mean(abs(r["device"] - r["public"]) for r in public) if public else None
        )
    return {
        **extra,
        "kernels": len(ok),
        "spearman": spearman([r["model"] for r in ok], [r["device"] for r in ok]),
        "mean_abs_pp": statistics.mean(abs(r["diff"]) for r in ok) if ok else None,
        "mid_range_kernels": len(mid),
        "mid_range_mean_abs_pp": statistics.mean(abs(r["diff"]) for r in mid) if mid else None,
        "mid_range_mean_diff_pp": statistics.mean(r["diff"] for r in mid) if mid else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="example: python benchmarks/fake_device_agreement.py --states 24",
    )
    ap.add_argument("--states", type=int, default=24, help="KernelIR states of ir/matmul (24)")
    ap.add_argument(
        "--no-tutorial",
        action="store_true",
        help="skip the NKI tutorial's fp32 kernels (the slowest to trace)",
    )
    ap.add_argument(
        "--no-scoreboard",
        action="store_true",
        help="skip the host-timed GEMM scoreboard (20 kernels up to 5120^3)",
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    started = time.monotonic()
    rows = compare(kernels(args.states, not args.no_tutorial))
    board = [] if args.no_scoreboard else scoreboard()
    result = {
        "rows": rows,
        **summary(rows),
        "scoreboard": board,
        "scoreboard_gaps": host_gaps(board) if board else None,
        "seconds": round(time.monotonic() - started, 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'kernel':32} {'model':>7} {'device':>7} {'model-device':>13} {'public Trn2':>12}")
    for r in rows:
        if "error" in r:
            print(f"{r['kernel']:32} fails: {r['error']}")
        else:
            public = f"{r['public']:12.2f}" if r["public"] is not None else f"{'':>12}"
            print(
                f"{r['kernel']:32} {r['model']:7.2f} {r['device']:7.2f} {r['diff']:+13.2f} {public}"
            )
    rho = result["spearman"]
    print(
        f"Spearman rho (model vs device) over {result['kernels']} kernels: {rho:.2f}"
        if rho is not None
        else "Spearman rho: undefined"
    )
    print(f"mean |model - device|: {result['mean_abs_pp']:.2f} pp MFU")
    if result["mid_range_kernels"]:
        print(
            f"mid-range (device {MID_RANGE[0]:.0f}-{MID_RANGE[1]:.0f} %), "
            f"{result['mid_range_kernels']} kernels: mean |diff| "
            f"{result['mid_range_mean_abs_pp']:.2f} pp, mean diff "
            f"{result['mid_range_mean_diff_pp']:+.2f} pp"
        )
    states = result["ir_states"]
    if states:
        print(
            f"ir/matmul states only ({states['kernels']}): rho {states['spearman']:.2f}, "
            f"mean |diff| {states['mean_abs_pp']:.2f} pp"
        )
    if result["device_vs_public_mean_abs_pp"] is not None:
        print(
            f"device vs public Trn2 figures (calibration kernels): mean |diff| "
            f"{result['device_vs_public_mean_abs_pp']:.2f} pp"
        )
    if board:
        print(f"{'scoreboard (host-timed)':32} {'model ms':>9} {'device ms':>10} {'public ms':>10}")
        for r in board:
            print(
                f"{r['kernel']:32} {r['model_ms']:9.4f} {r['device_ms']:10.4f} "
                f"{r['public_ms']:10.3f}"
            )
        for family, g in result["scoreboard_gaps"].items():
            print(
                f"{family}: public - device {g['device_gap_us_median']:.1f} us "
                f"(sd {g['device_gap_us_sd']:.1f}); public - model "
                f"{g['model_gap_us_median']:.1f} us (sd {g['model_gap_us_sd']:.1f})"
            )
    print(f"{result['seconds']} s")


if __name__ == "__main__":
    main()
