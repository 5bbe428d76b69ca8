"""`kernelopt report`: parse options, write the report, say where it went."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kernelopt.history import HistoryError
from kernelopt.session import SessionError, resolve_run


@click.command(name="report")
@click.argument("run_id", metavar="[RUN]", required=False)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Directory for index.html and the PNGs "
    "(default: <git dir>/kernelopt/reports/<RUN>, outside your checkout).",
)
@click.option(
    "--embed",
    is_flag=True,
    help="Put the images inside index.html as data URIs (one file to mail around).",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"out": ..., "files": [...]}.')
def report_command(run_id: str | None, out: str | None, embed: bool, as_json: bool) -> None:
    """Write a run's tuning story as an HTML page with plots.

    RUN defaults to the run whose worktree you are in, or the repository's
    only run. Without --out the page goes under the repository's git
    directory, never into your checkout; the path is printed. The page needs
    no network: it uses inline CSS, no scripts, and PNGs beside it (or inside
    it with --embed).

    \b
    Example:
      kernelopt report
      kernelopt report cpu_stencil-nov22 --out /tmp/r --json
    """
    from kernelopt.report.build import ReportError, report_for_run  # pandas, matplotlib

    try:
        repo_root, run_id = resolve_run(Path.cwd(), run_id, "`kernelopt report RUN`")
        report = report_for_run(repo_root, run_id, out, embed=embed)
    except (SessionError, HistoryError, ReportError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(report.to_json()))
        return
    click.echo(f"kernelopt: report for {run_id} written to {report.index}")
    for path in report.files[1:]:
        click.echo(f"  {path}")
