"""``kernelopt sim``: check one kernel against its workload and print the sim profile."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from kernelopt.sim.check import SimReport, check_kernel
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


@click.command("sim")
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
    help="Also print what bounds the time (an engine or a dependency chain) and the "
    "top three TensorE stalls with the source lines that cause them.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON record.")
@click.pass_context
def sim_command(
    ctx: click.Context,
    kernel_py: Path,
    workload_py: Path,
    func: str | None,
    precision: str,
    compiler_args: tuple[str, ...],
    explain: bool,
    as_json: bool,
) -> None:
    """Run KERNEL_PY in the NKI simulator, check it against the workload's
    f_numpy and estimate its Trainium2 time.

    Exit status: 0 when the numerics match, 1 when they do not (or the kernel
    breaks an ISA rule, runs out of memory or raises), 2 for usage errors.
    Figures are labelled sim: they are estimates, not hardware measurements.

    \b
    Example:
        kernelopt sim ir/matmul/kernel.py --workload ir/matmul/workload.py
        kernelopt sim kernel.py --workload workload.py --func matmul_kernel --json
        kernelopt sim kernel.py --workload workload.py --explain \\
            --compiler-arg enable-instruction-scheduling=false
    """
    try:
        workload = load_workload(workload_py, require=("f_numpy", "INPUT_SPECS"))
    except WorkloadError as exc:
        raise click.BadParameter(str(exc), param_hint="--workload") from None
    report = check_kernel(
        kernel_py,
        workload,
        func=func,
        precision=precision,
        compiler_args=compiler_args,
        explain=explain,
    )
    record = report_record(report)
    if as_json:
        click.echo(json.dumps(record, indent=2, sort_keys=True))
    else:
        verdict = "correct" if report.correct else "INCORRECT"
        click.echo(f"sim: {kernel_py} [{report.func or '?'}] {verdict}")
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
