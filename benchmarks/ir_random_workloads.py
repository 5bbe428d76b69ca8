"""Random LLM-operator workloads in the op classes: does every one build, sample, render
correctly, and how far does a 20-candidate run get?

The shipped programs and tests/ir/llm_workloads are written by us, so they test
the shapes we thought of. This script writes workloads in the same style from a
seed (row norms, layer norms and softmaxes, each optionally behind a residual
add or an activation and ahead of a transposed matmul; gated MLPs; a norm of a
matmul's rows; a residual and activation after a matmul; a norm ahead of two
chained matmuls; attention; an rms norm written with sqrt and a reciprocal,
then one of ScalarE's other activations, ahead of a matmul), at 256-1024 rows
and columns (``--sizes large``: 512-2048), and for each:

- builds it (`kernelopt ir show` does the same) and enumerates its rewrite variants;
- draws ``--samples`` states per variant at the workload's SMALL_SPECS (with
  ``--check-at full``, at its INPUT_SPECS: dims with more tiles, slower), renders
  each and checks it on the simulator against the workload's own numpy
  semantics (the op classes evaluated in fp32);
- with ``--reach``, runs it as a new user would (`kernelopt init --kind nki
  --workload W`, then a ``--budget``-candidate `kernelopt run` on sim) and
  prints the roofline % reached, and with ``--reference N`` the best of N
  random fitting states beside it.

    python benchmarks/ir_random_workloads.py --count 40 --seed 0
    python benchmarks/ir_random_workloads.py --count 12 --reach --reference 200 --keep /tmp/w
    python benchmarks/ir_random_workloads.py --count 20 --sizes large --reach
    python benchmarks/ir_random_workloads.py --count 20 --check-at full --samples 1
    python benchmarks/ir_random_workloads.py --count 25 --api beta1
    python benchmarks/ir_random_workloads.py --count 20 --dtype float32

Exits 1 when any workload fails to build, sample, render or check correct.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

SAFE = ("relu", "tanh", "sigmoid", "gelu", "silu", "copy")
KINDS = (
    "rms",
    "ln",
    "softmax",
    "rms_mm",
    "ln_mm",
    "softmax_mm",
    "resid_rms_mm",
    "gated",
    "mm_rms",
    "mm_resid",
    "mlp",
    "attention",
    "rms_sqrt_mm",
)
# Activations beyond the first ones, drawn only by the kinds added with them (so that a
# seed of the earlier kinds still writes the workload it wrote).
MORE = ("gelu_apprx_tanh", "gelu_apprx_sigmoid", "softplus", "mish", "erf", "arctan")


class Writer:
    """The body of f_nkigym, one SSA line per op."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.lines = rng, []

    def op(self, expr: str) -> str:
        name = f"t{len(self.lines) + 1}"
        self.lines.append(f"{name} = {expr}")
        return name


def rms_scale(g: Writer, x: str, n: int) -> str:
    """A [P, 1] column 1/sqrt(mean(x^2) + eps), in one of the spellings the ops allow."""
    if g.rng.random() < 0.6:
        sq = g.op(f"NKIActivation(op='square')(data={x})")
    else:
        sq = g.op(f"NKITensorTensor(op='multiply')(data1={x}, data2={x})")
    ss = g.op(f"NKITensorReduce(op='add', axis=1)(data={sq})")
    if g.rng.random() < 0.5:
        mean = g.op(
            f"NKITensorScalar(op0='multiply', operand0={1.0 / n!r}, op1='add', operand1=1e-5)"
            f"(data={ss})"
        )
        return g.op(f"NKIActivation(op='rsqrt')(data={mean})")
    return g.op(f"NKIActivation(op='rsqrt', scale={1.0 / n!r}, bias=1e-5)(data={ss})")


def scaled(g: Writer, x: str, col: str) -> str:
    """x times a [P, 1] column, given at construction, in the call, or as a scale."""
    pick = g.rng.random()
    if pick < 0.4:
        return g.op(f"NKITensorScalar(op0='multiply', operand0={col})(data={x})")
    if pick < 0.7:
        return g.op(f"NKIActivation(op='copy', scale={col})(data={x})")
    return g.op(f"NKITensorScalar(op0='multiply')(data={x}, operand0={col})")


def layernorm(g: Writer, x: str, n: int) -> str:
    total = g.op(f"NKITensorReduce(op='add', axis=1)(data={x})")
    neg_mean = g.op(f"NKITensorScalar(op0='multiply', operand0={-1.0 / n!r})(data={total})")
    if g.rng.random() < 0.5:
        sq = g.op(f"NKIActivation(op='square', bias={neg_mean})(data={x})")
    else:
        c = g.op(f"NKITensorScalar(op0='add', operand0={neg_mean})(data={x})")
        sq = g.op(f"NKITensorTensor(op='multiply')(data1={c}, data2={c})")
    var = g.op(
        f"NKITensorScalar(op0='multiply', operand0={1.0 / n!r}, op1='add', operand1=1e-5)"
        f"(data=NKITensorReduce(op='add', axis=1)(data={sq}))"
    )
    rstd = g.op(f"NKIActivation(op='rsqrt')(data={var})")
    if g.rng.random() < 0.5:
        return g.op(
            f"NKITensorScalar(op0='add', operand0={neg_mean}, op1='multiply', operand1={rstd})"
            f"(data={x})"
        )
    return scaled(g, g.op(f"NKITensorScalar(op0='add', operand0={neg_mean})(data={x})"), rstd)


def softmax(g: Writer, x: str) -> str:
    scale = g.rng.choice([None, 0.125, 0.5])
    neg_max = g.op(f"NKITensorReduce(op='maximum', axis=1, negate=True)(data={x})")
    if scale:
        bias = g.op(f"NKITensorScalar(op0='multiply', operand0={scale})(data={neg_max})")
        e = g.op(f"NKIActivation(op='exp', scale={scale}, bias={bias})(data={x})")
    else:
        e = g.op(f"NKIActivation(op='exp', bias={neg_max})(data={x})")
    total = g.op(f"NKITensorReduce(op='add', axis=1)(data={e})")
    if g.rng.random() < 0.5:
        return scaled(g, e, g.op(f"NKIReciprocal()(data={total})"))
    return g.op(f"NKITensorScalar(op0='divide', operand0={total})(data={e})")


SIZES = {
    # rows, the normalised (contracted) width, the matmul's output width
    "small": ((256, 512), (256, 512, 1024), (256, 512, 1024)),
    "large": ((512, 1024), (1024, 2048), (512, 1024)),
    # Row counts with no good divisor: overlapping row tiles (257 = 3 x 87 at stride 85).
    "odd": ((257, 331, 514, 1031), (256, 512, 1024), (256, 512, 1024)),
}


def workload_source(
    seed: int, sizes: str = "small", kinds: tuple[str, ...] = KINDS, dtype: str = "bfloat16"
) -> tuple[str, str]:
    """(kind, the text of a workload file) for one seed, its inputs in ``dtype``."""
    rng = random.Random(seed)
    g = Writer(rng)
    rows, k, n = (rng.choice(choices) for choices in SIZES[sizes])
    kind = rng.choice(kinds)
    specs: dict[str, tuple[int, int]] = {"x": (rows, k)}
    x = "x"
    if kind == "resid_rms_mm":
        specs["y"] = (rows, k)
        x = g.op("NKITensorTensor(op='add')(data1=x, data2=y)")
    if kind in ("rms", "ln", "softmax", "rms_mm", "ln_mm", "softmax_mm", "resid_rms_mm") and (
        rng.random() < 0.25
    ):
        x = g.op(f"NKIActivation(op={rng.choice(SAFE)!r})(data={x})")
    if kind in ("rms", "rms_mm", "resid_rms_mm"):
        out = scaled(g, x, rms_scale(g, x, k))
    elif kind in ("ln", "ln_mm"):
        out = layernorm(g, x, k)
    elif kind in ("softmax", "softmax_mm"):
        out = softmax(g, x)
    elif kind == "gated":
        specs = {"xT": (k, rows), "w1": (k, n), "w2": (k, n)}
        h1 = g.op("NKIMatmul()(stationary=xT, moving=w1)")
        h2 = g.op("NKIMatmul()(stationary=xT, moving=w2)")
        act = g.op(f"NKIActivation(op={rng.choice(['silu', 'gelu', 'sigmoid'])!r})(data={h1})")
        out = g.op(f"NKITensorTensor(op='multiply')(data1={act}, data2={h2})")
    elif kind == "attention":  # softmax(q k^T [* scale]) v, q and k given transposed
        d, keys = rng.choice([64, 128]), k
        specs = {"qT": (d, rows), "kT": (d, keys), "v": (keys, n)}
        s = g.op("NKIMatmul()(stationary=qT, moving=kT)")
        if rng.random() < 0.5:
            s = g.op(f"NKITensorScalar(op0='multiply', operand0={d**-0.5!r})(data={s})")
        p = softmax(g, s)
        out = g.op(f"NKIMatmul()(stationary=NKITranspose()(data={p}), moving=v)")
    elif kind == "mm_resid":  # act(x W + r): a residual (and an activation) after a matmul
        specs = {"xT": (k, rows), "w": (k, n), "r": (rows, n)}
        h = g.op("NKIMatmul()(stationary=xT, moving=w)")
        out = g.op(f"NKITensorTensor(op='add')(data1={h}, data2=r)")
        if rng.random() < 0.5:
            out = g.op(f"NKIActivation(op={rng.choice(SAFE)!r})(data={out})")
    elif kind == "mlp":  # rmsnorm, then two matmuls with an activation between
        specs = {"x": (rows, k), "w1": (k, n), "w2": (n, k)}
        h = scaled(g, "x", rms_scale(g, "x", k))
        h = g.op(f"NKIMatmul()(stationary=NKITranspose()(data={h}), moving=w1)")
        h = g.op(f"NKIActivation(op={rng.choice(['gelu', 'silu', 'relu'])!r})(data={h})")
        out = g.op(f"NKIMatmul()(stationary=NKITranspose()(data={h}), moving=w2)")
    elif kind == "rms_sqrt_mm":  # 1 / sqrt(mean(x^2) + eps) as sqrt, then a reciprocal
        ss = g.op(f"NKITensorReduce(op='add', axis=1)(data=NKIActivation(op='square')(data={x}))")
        rms = g.op(f"NKIActivation(op='sqrt', scale={1.0 / k!r}, bias=1e-5)(data={ss})")
        out = scaled(g, x, g.op(f"NKIReciprocal()(data={rms})"))
        out = g.op(f"NKIActivation(op={rng.choice(MORE)!r})(data={out})")
    else:  # mm_rms: the rows of a matmul's result normalised
        n = rng.choice([256, 512] if sizes == "small" else [512])
        specs = {"xT": (k, rows), "w": (k, n)}
        h = g.op("NKIMatmul()(stationary=xT, moving=w)")
        out = scaled(g, h, rms_scale(g, h, n))
    if kind.endswith("_mm"):
        if rng.random() < 0.2:
            out = g.op(f"NKIActivation(op={rng.choice(SAFE)!r})(data={out})")
        specs["w"] = (k, n)
        out = g.op(f"NKIMatmul()(stationary=NKITranspose()(data={out}), moving=w)")
    params = ", ".join(specs)
    body = "\n".join(f"    {line}" for line in [*g.lines, f"return {out}"])
    small = {name: tuple(min(d, 256) for d in shape) for name, shape in specs.items()}
    as_f32 = ", ".join(f"{p}=np.asarray({p}, dtype=np.float32)" for p in specs)
    text = f'''"""Random workload {seed}: {kind} (benchmarks/ir_random_workloads.py)."""

import numpy as np

from kernelopt.ir import (
    NKIActivation,
    NKIMatmul,
    NKIReciprocal,
    NKITensorReduce,
    NKITensorScalar,
    NKITensorTensor,
    NKITranspose,
)


def f_nkigym({params}):
{body}


def f_numpy({params}):
    # The op classes' own semantics, evaluated in fp32.
    return f_nkigym({as_f32})


INPUT_SPECS = {{{", ".join(f"{p!r}: ({s}, {dtype!r})" for p, s in specs.items())}}}
SMALL_SPECS = {{{", ".join(f"{p!r}: ({s}, {dtype!r})" for p, s in small.items())}}}
'''
    return kind, text


def check(path: Path, samples: int, full: bool = False, api: str = "nki") -> tuple[int, list[str]]:
    """(states checked, failures) for one workload file, at its SMALL_SPECS (``full``:
    at INPUT_SPECS, where dims have more tiles: slower, and it finds faults that need
    several tiles of a dim, such as a sum repeated over a loop of one); there the
    states are drawn as `kernelopt ir sample` draws them, fitting on chip. Each state
    is rendered in ``api`` (nki, or the beta-1 ``neuronxcc.nki``)."""
    from kernelopt.ir import REWRITES, build_ir, enumerate_rewrite_combinations, render_ir, sample
    from kernelopt.ir.sample import sample_fitting
    from kernelopt.sim import check_kernel
    from kernelopt.workload import load_workload

    w = load_workload(path)
    if not full:
        w = dataclasses.replace(w, input_specs=w.module.SMALL_SPECS)
    try:
        base = build_ir(w.f_nkigym, w.input_specs, name=path.stem)
        variants = dict(enumerate_rewrite_combinations(base, list(REWRITES.values())))
    except Exception as exc:  # noqa: BLE001 - reported, the benchmark goes on
        return 0, [f"build: {type(exc).__name__}: {exc}"]
    failures, checked = [], 0
    for name, variant in variants.items():
        for seed in range(samples):
            stage = "sample"
            try:
                # At full size, the states `kernelopt ir sample` draws: those that fit.
                state = (sample_fitting if full else sample)(variant, random.Random(seed))
                stage = "render"
                source = render_ir(state, api=api)
                stage = "check"
                with tempfile.TemporaryDirectory() as tmp:
                    kernel = Path(tmp) / "kernel.py"
                    kernel.write_text(source)
                    report = check_kernel(kernel, w)
                checked += 1
                if not report.correct:
                    failures.append(f"{name} seed {seed}: {report.error_kind}: {report.error}")
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{name} seed {seed}: {stage}: {type(exc).__name__}: {exc}")
    return checked, failures


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--count", type=int, default=40, help="how many workloads (default 40)")
    parser.add_argument(
        "--sizes",
        choices=sorted(SIZES),
        default="small",
        help="small: 256-1024; large: 512-2048; odd: prime-ish row counts (257-1031)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the first workload's seed")
    parser.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help=f"comma-separated, of {', '.join(KINDS)} (default: all)",
    )
    parser.add_argument("--samples", type=int, default=2, help="states checked per variant")
    parser.add_argument(
        "--check-at",
        choices=("small", "full"),
        default="small",
        help="check the states at SMALL_SPECS (default) or at INPUT_SPECS (slower)",
    )
    parser.add_argument(
        "--reach", action="store_true", help="also run each for --budget candidates"
    )
    parser.add_argument(
        "--api", choices=("nki", "beta1"), default="nki", help="render the checked states in"
    )
    parser.add_argument(
        "--dtype",
        choices=("bfloat16", "float32"),
        default="bfloat16",
        help="the inputs' dtype (float32: NKIBench's)",
    )
    parser.add_argument("--budget", type=int, default=20)
    parser.add_argument("--reference", type=int, default=0, help="best of N random states too")
    parser.add_argument("--keep", type=Path, help="write the workloads here (default: a temp dir)")
    parser.add_argument("--json", action="store_true", help="one JSON object per workload")
    args = parser.parse_args()
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        parser.error(f"--kinds: unknown {unknown}; expected some of {KINDS}")

    folder = args.keep or Path(tempfile.mkdtemp(prefix="kernelopt-random-workloads-"))
    folder.mkdir(parents=True, exist_ok=True)
    drawn, reached, broken = Counter(), [], 0
    for seed in range(args.seed, args.seed + args.count):
        kind, text = workload_source(seed, args.sizes, kinds, args.dtype)
        path = folder / f"random_{seed:03d}.py"
        path.write_text(text)
        drawn[kind] += 1
        checked, failures = check(path, args.samples, args.check_at == "full", args.api)
        broken += bool(failures)
        row = {"workload": str(path), "kind": kind, "checked": checked, "failures": failures}
        if args.reach:
            from tuning_runs import workload_runs  # beside this script, on sys.path when run

            result = workload_runs([str(path)], [0], args.budget, args.reference, True)[0]
            row["reached"] = result["runs"][0]["best"]
            row["best_known"] = result["best_known"] if args.reference else None
            reached.append(row["reached"] or 0.0)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            shape = text.split("INPUT_SPECS = ")[1].splitlines()[0]
            tail = ""
            if args.reach:
                known = (
                    f" (best of {args.reference}: {row['best_known']:.1f})"
                    if args.reference
                    else ""
                )
                tail = f"  reached {row['reached']:.1f} %{known}"
            print(
                f"{path.name} {kind:13s} {checked:3d} states checked, "
                f"{len(failures)} failed  {shape}{tail}",
                flush=True,
            )
            for failure in failures:
                print(f"    {failure[:400]}")
    if not args.json:
        print(f"{args.count} workloads ({dict(drawn)}) in {folder}: {broken} with a failure")
        if reached:
            print(
                f"{args.budget}-candidate runs: median {statistics.median(reached):.1f} % of roofline, "
                f"{sum(r >= 60 for r in reached)} of {len(reached)} at >= 60 %"
            )
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
