"""``kernelopt sim``: check one kernel against its workload and print the sim profile."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import click

from kernelopt.sim.calibration import CalibrationError, load_params
from kernelopt.sim.check import SimReport, check_kernel
from kernelopt.sim.chips import CHIPS
from kernelopt.sim.explain import Explanation
from kernelopt.workload import WorkloadError, load_workload

_PATH = click.Path(exists=True, dir_okay=False, path_type=Path)


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def report_record(report: SimReport) -> dict[str, Any]:
    """The profile plus the verdict, as printed by ``--json``."""
    record = dict(report.profile)
    record.update(
        device="sim",
        func=report.func,
        correct=report.correct,
        max_abs_error=_finite(report.max_abs_error),
        worst_seed=report.worst_seed,
        error=report.error,
        error_kind=report.error_kind,
    )
    if report.explanation is not None:
        record["explain"] = report.explanation
    return record


def _format(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@click.command("check")
@click.argument("kernel_py", type=_PATH)
@click.option(
    "--workload",
    "workload_py",
    required=True,
    type=_PATH,
    help="workload.py defining f_numpy and INPUT_SPECS.",
)
@click.option("--func", default=None, help="Kernel function (default: the only @nki.jit one).")
@click.option(
    "--precision",
    type=click.Choice(["fp32", "native"]),
    default="fp32",
    show_default=True,
    help="fp32: compute and store every float in fp32; native: round to declared dtypes.",
)
@click.option(
    "--compiler-arg",
    "compiler_args",
    multiple=True,
    metavar="OPTION",
    help="A neuronx-cc option the kernel is compiled with (repeatable), e.g. "
    "enable-instruction-scheduling=false: the engines then keep program order.",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Also print what bounds the time (an engine or a dependency chain), the "
    "top three TensorE stalls with the source lines that cause them, and each source "
    "line's instructions: engine, count, busy time, first start and last end.",
)
@click.option(
    "--chip",
    type=click.Choice(sorted(CHIPS)),
    default="trn2",
    show_default=True,
    help="The chip whose parameter set times the kernel (one NeuronCore of it).",
)
@click.option(
    "--calibration",
    type=_PATH,
    default=None,
    help="A calibration file (kernelopt sim calibrate) whose parameters the estimate uses, "
    "on top of --chip.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON record.")
@click.pass_context
def check_command(
    ctx: click.Context,
    kernel_py: Path,
    workload_py: Path,
    func: str | None,
    precision: str,
    compiler_args: tuple[str, ...],
    explain: bool,
    chip: str,
    calibration: Path | None,
    as_json: bool,
) -> None:
    """Run KERNEL_PY in the NKI simulator, check it against the workload's
    f_numpy and estimate its time on one NeuronCore of --chip (trn2 or trn1).
    Kernels in either NKI API run: nki and the beta-1 neuronxcc.nki.

    Exit status: 0 when the numerics match, 1 when they do not (or the kernel
    breaks an ISA rule, runs out of memory or raises), 2 for usage errors.
    Figures are labelled sim: they are estimates, not hardware measurements.

    \b
    Example:
        kernelopt sim ir/matmul/kernel.py --workload ir/matmul/workload.py
        kernelopt sim kernel.py --workload workload.py --func matmul_kernel --json
        kernelopt sim beta1_kernel.py --workload workload.py --chip trn1
        kernelopt sim kernel.py --workload workload.py --explain \\
            --compiler-arg enable-instruction-scheduling=false
    """
    try:
        workload = load_workload(workload_py, require=("f_numpy", "INPUT_SPECS"))
    except WorkloadError as exc:
        raise click.BadParameter(str(exc), param_hint="--workload") from None
    try:
        params = load_params(calibration, CHIPS[chip])
    except CalibrationError as exc:
        raise click.BadParameter(str(exc), param_hint="--calibration") from None
    # A workload with an op graph (f_nkigym) gives MFU and the roofline its math, as a
    # tuning run on the sim device measures them (work a kernel repeats, such as
    # overlapping tiles, is not model work); a kernel checked without one gets its trace's.
    from kernelopt.targets.nki import mac_count_of, roofline_work_of, with_roofline

    report = check_kernel(
        kernel_py,
        workload,
        params=params,
        func=func,
        precision=precision,
        compiler_args=compiler_args,
        explain=explain,
        mac_count=mac_count_of(workload),
    )

    work = roofline_work_of(workload)
    if work is not None and report.correct:
        report = dataclasses.replace(report, profile=with_roofline(report.profile, work, params))
    record = report_record(report)
    if as_json:
        click.echo(json.dumps(record, indent=2, sort_keys=True))
    else:
        verdict = "correct" if report.correct else "INCORRECT"
        click.echo(f"sim: {kernel_py} [{report.func or '?'}] {verdict} on {chip}")
        if report.error:
            click.echo(f"error ({report.error_kind}): {report.error}")
        shown = {k: v for k, v in record.items() if k not in ("error", "error_kind", "explain")}
        width = max(len(k) for k in shown) + 1
        for key, value in shown.items():
            click.echo(f"{key + ':':<{width}} {_format(value)}")
        if report.explanation is not None:
            click.echo("explain:")
            for line in Explanation.from_json(report.explanation).lines():
                click.echo(f"  {line}")
    ctx.exit(0 if report.correct else 1)


class _SimGroup(click.Group):
    """``kernelopt sim KERNEL_PY ...`` checks a kernel; ``kernelopt sim calibrate`` fits the model."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["check", *args]  # the kernel check, as `kernelopt sim` has always been
        return super().parse_args(ctx, args)


@click.group("sim", cls=_SimGroup)
def sim_command() -> None:
    """Run a kernel in the NKI simulator (`kernelopt sim KERNEL_PY --workload W`, see
    `kernelopt sim check --help`), or fit the cost model to a run's device
    measurements (`kernelopt sim calibrate`).

    \b
    Example:
        kernelopt sim ir/matmul/kernel.py --workload ir/matmul/workload.py --json
        kernelopt sim calibrate --run matmul-nov24 --json
        kernelopt sim kernel.py --workload workload.py --calibration calibration.json
    """


sim_command.add_command(check_command)


@sim_command.command("calibrate")
@click.option("--run", "run_id", default=None, help="The run (default: the worktree or only run).")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where the calibration file goes (default: <git dir>/kernelopt/calibration/RUN.json).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON record.")
def calibrate_command(run_id: str | None, out: Path | None, as_json: bool) -> None:
    """Fit the cost model's named Trn2 parameters (DMA fixed cost and bandwidth,
    sync latency) to a run's (sim estimate, device MFU) pairs, with k-fold
    cross-validation; print error_before, error_after (mean absolute MFU error
    on held-out pairs, percentage points) and spearman, and write a calibration
    file for `kernelopt sim --calibration` and search.screen.calibration.

    \b
    Example:
        kernelopt sim calibrate --run matmul-nov24
        kernelopt sim calibrate --json --out calibration.json
    """
    from kernelopt.history import HistoryError, RunRepo
    from kernelopt.session import SessionError, resolve_run
    from kernelopt.sim.calibrate import CalibrationProblem, calibrate, run_pairs
    from kernelopt.sim.calibration import write_calibration
    from kernelopt.sim.trn2 import DEFAULT_PARAMS

    try:
        root, run = resolve_run(Path.cwd(), run_id)
        pairs = run_pairs(root, run)
        params, figures = calibrate(pairs)
    except (SessionError, HistoryError, CalibrationProblem) as exc:
        raise click.UsageError(str(exc)) from None
    path = out or RunRepo(root, run).common_dir / "kernelopt" / "calibration" / f"{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    # The fit starts from, and its figures are about, the default chip.
    figures = {"run": run, "chip": DEFAULT_PARAMS.name, **figures}
    write_calibration(path, params, figures)
    record = {**figures, "params": params, "calibration": str(path)}
    if as_json:
        click.echo(json.dumps(record, indent=1, sort_keys=True))
        return
    for key in (
        "run",
        "chip",
        "pairs",
        "folds",
        "error_before",
        "error_after",
        "spearman_before",
        "spearman",
    ):
        click.echo(f"{key + ':':<16} {_format(record[key])}")
    for name, value in params.items():
        click.echo(f"{name + ':':<16} {_format(value)}")
    click.echo(f"calibration:     {path}")
