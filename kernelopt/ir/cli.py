"""``kernelopt ir``: show, validate, render and sample KernelIR knob states."""

from __future__ import annotations

import json
import random
from pathlib import Path

import click

from kernelopt.ir.knobs_io import (
    IR_REQUIRED,
    KnobsError,
    ir_for_workload,
    knobs_text,
    knobs_to_json,
    read_knobs,
)
from kernelopt.ir.model import KernelIR
from kernelopt.ir.render import APIS, render_ir
from kernelopt.ir.rewrites import REWRITES, enumerate_rewrite_combinations
from kernelopt.ir.sample import SampleError, knob_signature, sample_rotation
from kernelopt.ir.start import INIT_POOL, init_paths, initial_state
from kernelopt.ir.trace import IRBuildError
from kernelopt.ir.validate import validity_report
from kernelopt.output import ScreenProgress
from kernelopt.workload import Workload, WorkloadError, load_workload

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
SHOWN_FAILURES = 3  # of an invalid default state, in `ir show`


def _base(workload: Path | Workload) -> KernelIR:
    try:
        return ir_for_workload(workload)
    except (WorkloadError, IRBuildError, KnobsError) as exc:
        raise click.ClickException(str(exc)) from exc


def _with_knobs(knobs: Path, workload: Path) -> KernelIR:
    base = _base(workload)
    try:
        return read_knobs(knobs, base)
    except KnobsError as exc:
        raise click.ClickException(str(exc)) from exc


@click.group("ir")
def ir_group() -> None:
    """Inspect and drive the KernelIR knob surface of a workload.

    \b
    Example:
      kernelopt ir show ir/matmul/workload.py
      kernelopt ir init ir/matmul/workload.py --force
      kernelopt ir validate ir/matmul/knobs.json --workload ir/matmul/workload.py
      kernelopt ir render ir/matmul/knobs.json --workload ir/matmul/workload.py
    """


@ir_group.command("show")
@click.argument("workload", type=_FILE)
def show(workload: Path) -> None:
    """Print the IR of WORKLOAD (dimensions, buffers, operators, default knobs)
    for every rewrite variant, after the workload's roofline on trn2 (the time no
    kernel of it beats: what roofline_percent divides by).

    \b
    Example:
        kernelopt ir show ir/matmul_lhs_rhs/workload.py
    """
    try:
        loaded = load_workload(workload, require=IR_REQUIRED)
    except WorkloadError as exc:
        raise click.ClickException(str(exc)) from exc
    base = _base(loaded)
    click.echo(_roofline_line(loaded))
    for name, variant in enumerate_rewrite_combinations(base, list(REWRITES.values())):
        click.echo(f"== {name}")
        click.echo(repr(variant))
        broken = validity_report(variant)
        if broken:
            click.echo("  (no valid knob state was found; these knobs break:)")
            for f in broken[:SHOWN_FAILURES]:
                click.echo(f"    {f.check}({f.buffer}): {f.detail}")
            if len(broken) > SHOWN_FAILURES:
                click.echo(f"    ... and {len(broken) - SHOWN_FAILURES} more")


def _roofline_line(w: Workload) -> str:
    """The time no kernel of the workload beats on trn2 (the roofline the
    ``roofline_percent`` metric divides by), and its three parts."""
    from kernelopt.ir.mac import roofline_work
    from kernelopt.sim.roofline import PeakRates, roofline
    from kernelopt.sim.trn2 import DEFAULT_PARAMS

    r = roofline(roofline_work(w.f_nkigym, w.input_specs), PeakRates.of(DEFAULT_PARAMS))
    return (
        f"roofline on trn2: {r.time_s * 1e6:.2f} us, {r.bound.replace('_', '/')}-bound "
        f"(tensor {r.tensor_s * 1e6:.2f} us, vector/scalar {r.vector_scalar_s * 1e6:.2f} us, "
        f"hbm {r.hbm_s * 1e6:.2f} us); a kernel at T us reaches 100 x {r.time_s * 1e6:.2f} / T %"
    )


@ir_group.command("validate")
@click.argument("knobs", type=_FILE)
@click.option(
    "--workload", "-w", type=_FILE, required=True, help="The workload.py the knobs are for."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def validate(knobs: Path, workload: Path, as_json: bool) -> None:
    """Check a knobs.json against its workload; exit 1 when it is invalid.

    Each failure names the check, the buffer and a fix hint (the knob to change).

    \b
    Example:
        kernelopt ir validate ir/matmul/knobs.json --workload ir/matmul/workload.py
    """
    report = validity_report(_with_knobs(knobs, workload))
    if as_json:
        rows = [
            {
                "check": f.check,
                "buffer": f.buffer,
                "detail": f.detail,
                "fix_hint": f.fix_hint,
                "fix": f.fix,
            }
            for f in report
        ]
        click.echo(json.dumps({"valid": not report, "failures": rows}, indent=2))
    elif not report:
        click.echo(f"{knobs}: valid")
    else:
        for f in report:
            click.echo(f"{f.check}({f.buffer}): {f.detail}\n  fix: {f.fix_hint}")
    if report:
        raise SystemExit(1)


@ir_group.command("render")
@click.argument("knobs", type=_FILE)
@click.option(
    "--workload", "-w", type=_FILE, required=True, help="The workload.py the knobs are for."
)
@click.option(
    "--api",
    type=click.Choice(APIS),
    default="nki",
    show_default=True,
    help="nki (the current namespace) or beta1 (neuronxcc.nki, Neuron SDKs before 2.28).",
)
def render(knobs: Path, workload: Path, api: str) -> None:
    """Print the NKI kernel a valid knobs.json renders to.

    \b
    Example:
        kernelopt ir render ir/matmul/knobs.json --workload ir/matmul/workload.py > ir/matmul/kernel.py
        kernelopt ir render ir/matmul/knobs.json -w ir/matmul/workload.py --api beta1
    """
    ir = _with_knobs(knobs, workload)
    report = validity_report(ir)
    if report:
        problems = "\n".join(
            f"  {f.check}({f.buffer}): {f.detail} (fix: {f.fix_hint})" for f in report
        )
        raise click.ClickException(f"{knobs} is not a valid knob state:\n{problems}")
    click.echo(render_ir(ir, api=api), nl=False)


@ir_group.command("sample")
@click.argument("workload", type=_FILE)
@click.option(
    "-n", "count", type=click.IntRange(min=1), default=5, show_default=True, help="How many draws."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draws.")
@click.option("--json", "as_json", is_flag=True, help="One JSON knob state per line.")
def sample_cmd(workload: Path, count: int, seed: int, as_json: bool) -> None:
    """Draw N valid knob states of WORKLOAD that fit on chip, over its rewrite variants in turn.

    \b
    Example:
        kernelopt ir sample ir/matmul/workload.py -n 3 --seed 7 --json
    """
    base = _base(workload)
    variants = [ir for _, ir in enumerate_rewrite_combinations(base, list(REWRITES.values()))]
    try:
        states, skipped = sample_rotation(variants, count, random.Random(seed))
    except SampleError as exc:
        raise click.ClickException(str(exc)) from exc
    for variant, why in skipped.items():
        click.echo(f"kernelopt ir sample: skipped variant {variant}: {why}", err=True)
    for i, ir in enumerate(states):
        if as_json:
            click.echo(json.dumps(knobs_to_json(ir), sort_keys=True))
        else:
            click.echo(f"# {i}: {knob_signature(ir)}")
            click.echo(json.dumps(knobs_to_json(ir), indent=2))


@ir_group.command("init")
@click.argument("workload", type=_FILE)
@click.option(
    "--pool",
    type=click.IntRange(min=0),
    default=INIT_POOL,
    show_default=True,
    help="States screened on the simulator (each variant's defaults and joint draws); "
    "0 writes the default knobs without simulating.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draws.")
@click.option(
    "--knobs", "knobs_path", type=click.Path(path_type=Path), help="Where to write knobs.json."
)
@click.option(
    "--kernel", "kernel_path", type=click.Path(path_type=Path), help="Where to write kernel.py."
)
@click.option("--force", is_flag=True, help="Overwrite existing files.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def init_cmd(
    workload: Path,
    pool: int,
    seed: int,
    knobs_path: Path | None,
    kernel_path: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Write a first knobs.json and kernel.py for WORKLOAD: the state to start tuning from.

    The best of --pool valid states (every rewrite variant's default knobs and joint
    draws), ranked by the simulator's time estimate; beside the workload unless
    --knobs/--kernel say otherwise (ir/NAME/workload.py gets ir/NAME/knobs.json and
    ir/NAME/kernel.py). Existing files are kept unless --force.

    \b
    Example:
        kernelopt ir init ir/rmsnorm/workload.py
        kernelopt ir init ir/rmsnorm/workload.py --pool 0 --force --json
    """
    try:
        loaded = load_workload(workload)
        ir, seconds, timed = initial_state(loaded, pool, seed, ScreenProgress())
    except (WorkloadError, IRBuildError, KnobsError, SampleError) as exc:
        raise click.ClickException(str(exc)) from exc
    default_knobs, default_kernel = init_paths(workload)
    targets = {
        knobs_path or default_knobs: knobs_text(ir),
        kernel_path or default_kernel: render_ir(ir),
    }
    existing = [str(p) for p in targets if p.exists()]
    if existing and not force:
        raise click.ClickException(f"{', '.join(existing)} exist(s); --force overwrites")
    for path, text in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    knobs_file, kernel_file = targets
    estimate = None if seconds is None else round(seconds * 1e6, 3)
    if as_json:
        record = {
            "knobs": str(knobs_file),
            "kernel": str(kernel_file),
            "variant": ir.variant,
            "estimate_us": estimate,
            "screened": pool,
            "timed": timed,
        }
        click.echo(json.dumps(record, indent=2))
        return
    how = (
        "the default knobs"
        if estimate is None
        else f"the best of {timed} states screened on sim, estimate {estimate:g} us"
    )
    click.echo(f"wrote {knobs_file} (variant {ir.variant}: {how})")
    click.echo(f"wrote {kernel_file}")
