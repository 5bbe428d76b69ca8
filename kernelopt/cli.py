"""The command line: parse options, call the library, print. Nothing else.

The commands that drive a run and read it back (run, try, status, log) are in
run_cli.py; printing lives in output.py, the data status and log show in
views.py, exit codes and the errors that carry them in exits.py.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from kernelopt import __version__
from kernelopt.exits import JsonErrorsGroup, UsageProblem, checked_name
from kernelopt.history import HistoryError, RunRepo, find_repo, list_runs
from kernelopt.run_cli import log_command, run_command, status_command, try_command


@click.group(
    cls=JsonErrorsGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="kernelopt")
def main() -> None:
    """A git-native runner for kernel tuning.

    Every candidate is a commit on a run branch in its own worktree; kept
    results land in performance.md and `git log` is the tuning story.

    \b
    Example:
      kernelopt run programs/matmul.md
      kernelopt status
      kernelopt log
    """


@main.command()
@click.option(
    "--name",
    default="example",
    show_default=True,
    callback=checked_name,
    help="The program's name.",
)
@click.option("--kind", type=click.Choice(["command", "nki"]), default="command", show_default=True)
@click.option(
    "--workload",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="nki: an existing workload.py in this repository to tune (default: a template "
    "matmul under ir/<name>/). Its knobs.json and kernel.py are written beside it.",
)
def init(name: str, kind: str, workload: Path | None) -> None:
    """Scaffold programs/<name>.md, ir/<name>/ and performance.md in this git repository.

    The program runs as it is: a command target gets a small benchmark and
    its knob file, an nki target a workload with its kernel and knobs. For an nki
    target the first knob state is the best of a few states screened on the
    simulator (`kernelopt ir init`), and the metric is MFU for a graph of matmuls
    bound by TensorE, roofline_percent for anything else. Existing files are left alone.

    \b
    Example:
      kernelopt init --name blur
      kernelopt init --name rmsnorm --kind nki --workload ir/rmsnorm/workload.py
      git add programs ir performance.md && git commit -m "kernelopt: blur"
      kernelopt run programs/blur.md
    """
    from kernelopt.output import ScreenProgress
    from kernelopt.scaffold import scaffold

    if workload is not None and kind != "nki":
        raise UsageProblem("--workload is for --kind nki")
    root = _repo_root().resolve()
    from kernelopt.ir.sample import SampleError

    try:
        made = scaffold(root, name, kind, workload, ScreenProgress())
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    except SampleError as exc:
        raise click.ClickException(f"{workload}: {exc}") from None
    for path, created in made:
        click.echo(f"{'created' if created else 'kept   '} {path.relative_to(root)}")
    program = Path("programs") / f"{name}.md"
    click.echo("next: kernelopt tunes committed code, so commit, then run:")
    paths = " ".join(shlex.quote(p) for p in _to_commit(root, made, workload))
    click.echo(f"  git add {paths} && git commit -m 'kernelopt: {name}'")
    click.echo(f"  kernelopt run {program}")


def _to_commit(root: Path, made: list[tuple[Path, bool]], workload: Path | None) -> list[str]:
    """What `git add` needs after init: the top folder or file of everything made (and
    of the workload), ``programs``, ``ir`` and ``performance.md`` first. A workload
    outside ir/ gets its knobs and kernel beside it, which ``ir`` would not cover."""
    paths = [p for p, _ in made] + ([workload.resolve()] if workload is not None else [])
    tops = {p.relative_to(root).parts[0] for p in paths}
    first = [t for t in ("programs", "ir", "performance.md") if t in tops]
    return first + sorted(tops - set(first))


@main.command(name="runs")
@click.option("--json", "as_json", is_flag=True, help="Every run as a JSON list.")
def runs_(as_json: bool) -> None:
    """List the runs recorded in this repository: BEST, attempts and state of each.

    \b
    Example:
      kernelopt runs
      kernelopt runs --json | jq -r '.[] | select(.stopped | not) | .run'
    """
    from kernelopt.output import runs_lines
    from kernelopt.views import run_row

    root = _repo_root()
    rows = [run_row(RunRepo(root, run_id)) for run_id in list_runs(root)]
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    for line in runs_lines(rows):
        click.echo(line)


def _repo_root() -> Path:
    try:
        return find_repo(Path.cwd())
    except HistoryError as exc:
        raise UsageProblem(str(exc)) from None


main.add_command(run_command, name="run")
main.add_command(try_command, name="try")
main.add_command(status_command, name="status")
main.add_command(log_command, name="log")


def _register_plugins() -> None:
    """Commands that live beside the library they front."""
    from kernelopt.devices.cli import gate_command
    from kernelopt.ir.cli import ir_group
    from kernelopt.neuron.cli import doctor_command, fake_trn2_group
    from kernelopt.report.cli import report_command
    from kernelopt.sim.cli import sim_command

    main.add_command(sim_command, name="sim")
    main.add_command(ir_group, name="ir")
    main.add_command(gate_command, name="gate")
    main.add_command(report_command, name="report")
    main.add_command(fake_trn2_group, name="fake-trn2")
    main.add_command(doctor_command, name="doctor")


_register_plugins()


if __name__ == "__main__":
    main()
