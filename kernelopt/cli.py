"""The command line: parse options, call the library, print. Nothing else."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from kernelopt import __version__
from kernelopt.agent import lessons, render_lessons
from kernelopt.durations import parse_duration
from kernelopt.history import HistoryError, RunRepo, default_tag, find_repo, list_runs
from kernelopt.loop import AttemptResult, RunBusy, RunStopped, RunSummary
from kernelopt.program import Program, ProgramError, load_program
from kernelopt.proposers.base import Observation
from kernelopt.session import (
    AgentCommand,
    Session,
    SessionError,
    current_run,
    describe_device,
    program_for_run,
    resolve_run,
)

EXIT_CODES = {
    "keep": 0,
    "tie": 10,
    "regression": 11,
    "incorrect": 12,
    "failed": 13,
    "diverged": 14,
    "interrupted": 15,
}
EXIT_STOP = 20
EXIT_USAGE = 2


class Printer:
    """Progress lines for people, or one JSON object per event for programs."""

    def __init__(self, as_json: bool, metric: str = ""):
        self.as_json = as_json
        self.metric = metric
        self.open_line: int | None = None  # the attempt whose line awaits its verdict

    def _close(self) -> None:
        if self.open_line is not None:
            click.echo("")
            self.open_line = None

    def event(self, name: str, **data: Any) -> None:
        if self.as_json:
            if name == "attempt":
                click.echo(json.dumps({"event": "attempt", **data["result"].to_json()}))
            elif name in ("waiting", "host_fault"):
                click.echo(json.dumps({"event": name, **data}))
            return
        if name == "measuring":
            self._close()
            click.echo(
                f"  {_label(data['attempt'], data['kind'])}: {data['hypothesis']} ...", nl=False
            )
            self.open_line = data["attempt"]
        elif name == "sample":
            click.echo(".", nl=False)
        elif name == "attempt":
            r = data["result"]
            if self.open_line == r.attempt:
                click.echo(" " + format_result(r, self.metric))
                self.open_line = None
            else:
                self._close()
                click.echo(
                    f"  {_label(r.attempt, r.kind)}: {r.hypothesis} ... {format_result(r, self.metric)}"
                )
        elif name == "agent":
            self._close()
            what = {
                "repair": f"repairing #{data['attempt']}",
                "split": f"splitting #{data['attempt']}",
            }
            click.echo(f"  agent round ({what.get(data['mode'], 'improve')})")
        elif name == "waiting":
            self._close()
            click.echo(
                f"  no idle device ({data['reason']}); waited {data['waited_s']:.0f}s, "
                f"next look in {data['next_poll_s']:.0f}s"
            )
        elif name == "host_fault":
            self._close()
            click.echo(
                f"  host fault on #{data['attempt']}, retrying on another device: {data['error']}"
            )


def _label(attempt: int, kind: str) -> str:
    return "baseline" if kind == "baseline" else f"#{attempt} {kind}"


def format_metric(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def format_result(r: AttemptResult, metric: str) -> str:
    gain = "" if r.gain is None else f" ({r.gain * 100:+.2f}%)"
    parts = [f"{r.verdict.upper()}", f"{metric} {format_metric(r.metric)}{gain}"]
    parts.append(f"best {format_metric(r.best_metric)}")
    parts.append(f"regressions {r.consecutive_regressions}")
    if r.samples > 1:
        parts.append(f"{r.samples} samples")
    if r.reused_from is not None:
        parts.append(f"same tree as #{r.reused_from}")
    if r.improved or r.regressed:
        parts.append(f"improved [{', '.join(r.improved)}] regressed [{', '.join(r.regressed)}]")
    text = " | ".join(parts)
    if r.error:
        text += f"\n      {r.error.splitlines()[0][:300]}"
    return text


def _fail(message: str, code: int = 1) -> None:
    click.echo(f"kernelopt: {message}", err=True)
    sys.exit(code)


def _load(program_path: str) -> Program:
    try:
        return load_program(program_path)
    except ProgramError as exc:
        _fail(str(exc), EXIT_USAGE)
        raise  # unreachable


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
@click.argument("program", type=click.Path(dir_okay=False))
@click.option(
    "--tag", help="Run tag; the branch is kernelopt/<name>-<tag> (default: today, e.g. nov22)."
)
@click.option(
    "--max-candidates", type=int, help="Stop after this many candidates in this invocation."
)
@click.option(
    "--remeasure",
    is_flag=True,
    help="Measure a candidate even when an earlier attempt had the same tree.",
)
@click.option(
    "--worktree",
    type=click.Path(file_okay=False),
    help="Where the run's worktree lives (default: inside .git/kernelopt).",
)
@click.option(
    "--agent",
    "agent_cmd",
    help="Drive this agent command each round instead of the knob proposers.",
)
@click.option(
    "--agent-timeout",
    default="30m",
    show_default=True,
    help="Longest one agent round may take (30s, 10m, 1h).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per attempt, then a summary object."
)
def run(
    program: str,
    tag: str | None,
    max_candidates: int | None,
    remeasure: bool,
    worktree: str | None,
    agent_cmd: str | None,
    agent_timeout: str,
    as_json: bool,
) -> None:
    """Tune PROGRAM: baseline first, then candidates until a stop condition.

    Running the same command again resumes the run where it stopped (also
    after Ctrl-C or a crash). The user's checkout is never modified.

    \b
    Example:
      kernelopt run programs/matmul.md
      kernelopt run programs/cpu_stencil.md --tag try2 --max-candidates 10
      kernelopt run programs/matmul.md --agent 'my-agent --task "$KERNELOPT_CONTEXT"'

    With --agent, each round runs the command in the worktree with
    KERNELOPT_CONTEXT (markdown), KERNELOPT_CONTEXT_JSON and
    KERNELOPT_HYPOTHESIS_FILE in its environment; the agent edits files and
    writes its one-sentence hypothesis to that file.
    """
    prog = _load(program)
    try:
        timeout_s = parse_duration(agent_timeout, what="--agent-timeout")
    except ValueError as exc:
        _fail(str(exc), EXIT_USAGE)
        return
    printer = Printer(as_json, prog.metric)
    try:
        session = Session.create(
            prog,
            tag=tag or default_tag(),
            worktree=worktree,
            reporter=printer,
            remeasure=remeasure,
            agent=AgentCommand(agent_cmd, timeout_s) if agent_cmd else None,
        )
    except (SessionError, HistoryError) as exc:
        _fail(str(exc), EXIT_USAGE)
        return
    if not as_json:
        click.echo(f"kernelopt: run {session.run_id} on device {describe_device(session)}")
        click.echo(f"  worktree {session.runner.repo.worktree}")
        click.echo(f"  branch   {session.runner.repo.branch}")
    try:
        with session.runner.locked():
            summary = session.runner.run(session.proposer, max_candidates)
    except RunBusy as exc:
        _fail(str(exc), 3)
        return
    except KeyboardInterrupt:
        click.echo(
            "\nkernelopt: interrupted; the attempt in flight is recorded as interrupted and the branch is at BEST.",
            err=True,
        )
        click.echo(
            f"  resume with: kernelopt run {program}" + (f" --tag {tag}" if tag else ""), err=True
        )
        sys.exit(130)
    _print_summary(summary, as_json, program)
    if summary.failed:
        sys.exit(1)


def _print_summary(s: RunSummary, as_json: bool, program: str) -> None:
    if as_json:
        click.echo(json.dumps({"event": "summary", **s.to_json()}))
        return
    click.echo(f"kernelopt: {s.reason}")
    if s.failed:
        click.echo(
            "  fix the benchmark, the program or the code, commit, and run the same command again:"
        )
        click.echo(f"    kernelopt run {program}")
        return
    improvement = s.improvement
    gain = (
        ""
        if improvement is None
        else f" ({improvement * 100:+.2f}% vs baseline {format_metric(s.baseline_metric)})"
    )
    click.echo(
        f"  best {s.metric} {format_metric(s.best_metric)}{gain}, {s.kept} kept of {s.attempts} attempts"
    )
    click.echo(f"  worktree {s.worktree}")
    click.echo(f"  branch   {s.branch}  (BEST {(s.best_commit or '')[:10]})")
    click.echo("  look at it:")
    click.echo(f"    git log {s.branch}")
    click.echo(f"    kernelopt log --run {s.run_id}")
    click.echo(f"    kernelopt report {s.run_id} --out kernelopt-report-{s.run_id}")


@main.command(name="try")
@click.option(
    "-m",
    "--message",
    "hypothesis",
    required=True,
    help="The one-sentence hypothesis behind this change.",
)
@click.option(
    "--program",
    "program_path",
    type=click.Path(dir_okay=False),
    help="The program (default: the one the run was started with).",
)
@click.option(
    "--kind",
    type=click.Choice(["edit", "agent"]),
    default="edit",
    show_default=True,
    help="How the change was made.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def try_(hypothesis: str, program_path: str | None, kind: str, as_json: bool) -> None:
    """Evaluate the worktree's uncommitted change as one candidate.

    Run it inside a run's worktree after each edit. kernelopt commits the
    change, measures it, keeps it (BEST moves) or reverts the worktree to
    BEST, and prints the verdict and the counters.

    \b
    Exit codes:
      0 keep, 10 tie, 11 regression, 12 incorrect, 13 failed, 14 diverged,
      15 interrupted, 20 the run has stopped (stop now), 2 usage or program error.

    \b
    Example:
      cd "$(kernelopt status --json | jq -r .worktree)"
      $EDITOR ir/cpu_stencil/knobs.json
      kernelopt try -m "a larger block keeps the tile in L1" --json
    """
    try:
        repo_root, run_id = current_run(Path.cwd())
        prog = _load(program_path) if program_path else program_for_run(repo_root, run_id)
        session = Session.attach(prog, repo_root, run_id)
    except (SessionError, HistoryError, ProgramError) as exc:
        _fail(str(exc), EXIT_USAGE)
        return
    runner = session.runner
    try:
        with runner.locked():
            runner.open(agent_mode=True)
            try:
                result = runner.try_worktree(hypothesis, kind)
            except KeyboardInterrupt:
                message = "interrupted; the attempt is recorded as interrupted and the worktree is at BEST"
                click.echo(
                    json.dumps({"verdict": "interrupted", "stop": False})
                    if as_json
                    else f"kernelopt: {message}"
                )
                sys.exit(EXIT_CODES["interrupted"])
            reason = result.stop_reason if result.stop else runner.stop_reason()
    except RunBusy as exc:
        _fail(str(exc), 3)
        return
    except RunStopped as exc:
        if as_json:
            click.echo(json.dumps({"verdict": None, "stop": True, "stop_reason": str(exc)}))
        else:
            click.echo(f"kernelopt: {exc}. Stop working on this run.")
        sys.exit(EXIT_STOP)
    data = result.to_json()
    data["stop"] = bool(reason)
    data["stop_reason"] = reason
    if as_json:
        click.echo(json.dumps(data))
    else:
        click.echo(f"#{result.attempt} {format_result(result, prog.metric)}")
        if reason:
            click.echo(f"kernelopt: the run has stopped: {reason}")
    sys.exit(EXIT_STOP if reason else EXIT_CODES.get(result.verdict, 13))


@main.command()
@click.option(
    "--run", "run_id", help="The run (default: the worktree you are in, or the only run)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(run_id: str | None, as_json: bool) -> None:
    """Where a run stands: BEST_COMMIT, its metric, attempts and counters.

    \b
    Example:
      kernelopt status
      kernelopt status --run matmul-nov22 --json
    """
    try:
        repo_root, run_id = resolve_run(Path.cwd(), run_id)
    except (SessionError, HistoryError) as exc:
        _fail(str(exc), EXIT_USAGE)
        return
    repo = RunRepo(repo_root, run_id)
    state = repo.load_state()
    best = state.best
    base = state.baseline
    counters = state.counters
    data = {
        "run": run_id,
        "worktree": str(repo.worktree),
        "branch": repo.branch,
        "best_commit": state.best_commit,
        "best_attempt": best.attempt if best else None,
        "best_metric": best.metric if best else None,
        "metric": (best.note.get("metric_name") if best else None),
        "baseline_metric": base.metric if base else None,
        "reference": _reference_of(base.note if base else {}),
        "attempts": len([r for r in state.attempts if r.attempt > 0]),
        "consecutive_regressions": counters.consecutive_regressions,
        "recent_regressions": list(counters.recent_regressions),
        "stopped": state.stop is not None,
        "stop_reason": state.stop.get("reason") if state.stop else None,
        "best_profile": (best.measurement.get("profile") if best else None) or {},
    }
    if as_json:
        click.echo(json.dumps(data, indent=1))
        return
    click.echo(
        f"run        {run_id}{'  (stopped: ' + str(data['stop_reason']) + ')' if data['stopped'] else ''}"
    )
    click.echo(f"worktree   {data['worktree']}")
    click.echo(f"branch     {data['branch']}")
    click.echo(f"BEST       {(state.best_commit or '')[:10]} (attempt #{data['best_attempt']})")
    click.echo(
        f"best       {data['metric']} {format_metric(data['best_metric'])}  baseline {format_metric(data['baseline_metric'])}"
    )
    ref = data["reference"]
    if ref:
        value = format_metric(ref["metric"]) if ref["metric"] is not None else f"n/a ({ref['why']})"
        click.echo(f"reference  {ref['what']}: {value}")
    click.echo(f"attempts   {data['attempts']}")
    click.echo(f"regressions in a row {counters.consecutive_regressions}")
    for r in counters.recent_regressions:
        click.echo(
            f"  #{r.get('attempt')} {r.get('hypothesis')} ({(r.get('gain') or 0) * 100:+.2f}%)"
        )


def _reference_of(note: dict[str, Any]) -> dict[str, Any] | None:
    ref = note.get("reference")
    if not ref:
        return None
    return {"what": ref.get("what"), "metric": ref.get("metric"), "why": ref.get("why")}


@main.command()
@click.option(
    "--run", "run_id", help="The run (default: the worktree you are in, or the only run)."
)
@click.option(
    "--lessons",
    "lessons_only",
    is_flag=True,
    help="What was learned: kept, regressed, failed ideas and why.",
)
@click.option("--plain", is_flag=True, help="One plain line per attempt, no table or colours.")
@click.option("--json", "as_json", is_flag=True, help="Every attempt as a JSON list.")
def log(run_id: str | None, lessons_only: bool, plain: bool, as_json: bool) -> None:
    """Every attempt of a run, kept or not, with verdicts and numbers.

    Discarded attempts stay reachable: `git checkout <commit>` shows one.

    \b
    Example:
      kernelopt log
      kernelopt log --run cpu_stencil-nov22 --json
      kernelopt log --lessons
    """
    try:
        repo_root, run_id = resolve_run(Path.cwd(), run_id)
    except (SessionError, HistoryError) as exc:
        _fail(str(exc), EXIT_USAGE)
        return
    state = RunRepo(repo_root, run_id).load_state()
    if lessons_only:
        data = lessons([Observation.of(r) for r in state.attempts])
        click.echo(
            json.dumps(data, indent=1) if as_json else (render_lessons(data) or "no lessons yet")
        )
        return
    rows = []
    for r in state.attempts:
        rows.append(
            {
                "attempt": r.attempt,
                "commit": r.commit,
                "kind": r.kind,
                "verdict": r.verdict,
                "metric": r.metric,
                "best_metric": r.note.get("best_metric"),
                "gain": r.note.get("gain"),
                "hypothesis": r.hypothesis,
                "error": r.note.get("error", ""),
                "time": r.note.get("time"),
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    if not plain:
        from rich.console import Console

        from kernelopt.report.table import render_log_table

        render_log_table(rows, Console())
        return
    for row in rows:
        gain = "" if row["gain"] is None else f"{row['gain'] * 100:+7.2f}%"
        click.echo(
            f"#{row['attempt']:<4} {row['commit'][:10]} {row['verdict']:<11} "
            f"{format_metric(row['metric']):>10} {gain:>8}  {row['kind']}: {row['hypothesis']}"
        )
        if row["error"]:
            click.echo(f"      {row['error'].splitlines()[0][:200]}")


@main.command()
@click.option("--name", default="example", show_default=True, help="The program's name.")
@click.option("--kind", type=click.Choice(["command", "nki"]), default="command", show_default=True)
def init(name: str, kind: str) -> None:
    """Scaffold programs/<name>.md, ir/ and performance.md in this git repository.

    Existing files are left alone.

    \b
    Example:
      kernelopt init --name blur
      kernelopt run programs/blur.md
    """
    from kernelopt.scaffold import scaffold

    try:
        root = find_repo(Path.cwd())
    except HistoryError as exc:
        _fail(str(exc), EXIT_USAGE)
        return
    for path, created in scaffold(root, name, kind):
        click.echo(f"{'created' if created else 'kept   '} {path.relative_to(root)}")


@main.command(name="runs")
def runs_() -> None:
    """List the runs recorded in this repository.

    \b
    Example:
      kernelopt runs
    """
    try:
        root = find_repo(Path.cwd())
    except HistoryError as exc:
        _fail(str(exc), EXIT_USAGE)
        return
    for run_id in list_runs(root):
        click.echo(run_id)


def _register_plugins() -> None:
    """Commands that live beside the library they front."""
    from kernelopt.devices.cli import gate_command
    from kernelopt.ir.cli import ir_group
    from kernelopt.neuron.cli import fake_trn2_group
    from kernelopt.report.cli import report_command
    from kernelopt.sim.cli import sim_command

    main.add_command(sim_command, name="sim")
    main.add_command(ir_group, name="ir")
    main.add_command(gate_command, name="gate")
    main.add_command(report_command, name="report")
    main.add_command(fake_trn2_group, name="fake-trn2")


_register_plugins()


if __name__ == "__main__":
    main()
