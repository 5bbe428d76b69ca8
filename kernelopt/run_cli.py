"""`kernelopt run`, `try`, `status` and `log`: the commands that drive a run and
read it back. Parse options, call the library, print; what a run's failures
and interruptions say (on stderr, or as JSON) and which code they exit with
is in the context managers below, one per driving command.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from kernelopt import interrupts
from kernelopt.agent import lessons, render_lessons
from kernelopt.durations import parse_duration
from kernelopt.exits import (
    EXIT_CTRL_C,
    EXIT_STOP,
    CliError,
    OwnFault,
    RunInUse,
    UsageProblem,
    checked_name,
    exit_code_of,
)
from kernelopt.history import HistoryError, RunRepo, default_tag
from kernelopt.hypothesis import hypothesis_problem
from kernelopt.loop import NothingToTry, RunBusy, Runner, RunStopped
from kernelopt.measurement import Fault
from kernelopt.output import Printer, format_result, print_log, print_summary, status_lines
from kernelopt.program import Program, ProgramError, load_program
from kernelopt.proposers.base import Observation
from kernelopt.records import AttemptResult
from kernelopt.session import (
    AgentCommand,
    Session,
    SessionError,
    current_run,
    describe_device,
    program_for_run,
    program_to_run,
    resolve_run,
)
from kernelopt.views import log_rows, status_view
from kernelopt.worktrees import drop_changes, edits_made_while_measuring


def _load(program_path: str) -> Program:
    try:
        return load_program(program_path)
    except ProgramError as exc:
        raise UsageProblem(str(exc)) from None


@click.command(name="run")
@click.argument("program", type=click.Path(dir_okay=False))
@click.option(
    "--tag",
    callback=checked_name,
    help="Run tag; the branch is kernelopt/<name>-<tag> (default: today, e.g. nov22).",
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
def run_command(
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
      kernelopt run programs/matmul.md --agent 'my-agent --task "$(cat "$KERNELOPT_CONTEXT")"'

    With --agent, each round runs the command in the worktree with
    KERNELOPT_CONTEXT (the path of a markdown file: the task and the history),
    KERNELOPT_CONTEXT_JSON (the path of the same as JSON) and
    KERNELOPT_HYPOTHESIS_FILE in its environment; the agent edits files and
    writes its one-sentence hypothesis to that file.
    """
    prog = _from_head(_load(program))
    try:
        timeout_s = parse_duration(agent_timeout, what="--agent-timeout")
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    run_tag = tag or default_tag()
    try:  # HEAD's program for a new run; a resumed run keeps the rules it started with
        prog, warnings = program_to_run(prog, run_tag)
    except (SessionError, HistoryError) as exc:
        raise UsageProblem(str(exc)) from None
    for warning in warnings:
        click.echo(f"kernelopt: warning: {warning}", err=True)
    printer = Printer(as_json, prog.metric, budget=prog.stop.max_candidates, limit=max_candidates)
    try:
        session = Session.create(
            prog,
            tag=run_tag,
            worktree=worktree,
            reporter=printer,
            remeasure=remeasure,
            agent=AgentCommand(agent_cmd, timeout_s) if agent_cmd else None,
        )
    except (SessionError, HistoryError) as exc:
        raise UsageProblem(str(exc)) from None
    runner = session.runner
    if not as_json:
        click.echo(f"kernelopt: run {session.run_id} on device {describe_device(session)}")
        click.echo(f"  worktree {runner.repo.worktree}")
        click.echo(f"  branch   {runner.repo.branch}")
    try:
        with _run_failures(program, tag, as_json), interrupts.as_interrupts(), runner.locked():
            summary = runner.run(session.proposer, max_candidates)
            session.close(finished=True)  # a refit under way is finished and recorded
    finally:
        session.close()  # stops what is still running after an interrupt or an error
    for edit in edits_made_while_measuring(runner.repo, put_back=False):
        click.echo(f"kernelopt: {edit['message']}", err=True)
    print_summary(summary, as_json, program)
    if summary.failed:
        sys.exit(1)


@contextmanager
def _run_failures(program: str, tag: str | None, as_json: bool) -> Iterator[None]:
    """How ``run`` ends when it cannot go on: the run is busy, git refused a step,
    kernelopt's own storage, lock or host failed, or it was interrupted (then the
    command that resumes it is printed)."""
    try:
        yield
    except RunBusy as exc:
        raise RunInUse(str(exc)) from None
    except HistoryError as exc:  # git refused a step: say which, resume later
        raise CliError(f"{exc}\n  the run is recorded up to the last finished attempt") from None
    except (Fault, OSError) as exc:
        raise OwnFault.of(exc) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP
        if as_json:
            click.echo(json.dumps({"event": "interrupted", "error": {"kind": "interrupted"}}))
        click.echo(
            f"\nkernelopt: {interrupts.reason(exc)}; the attempt in flight is recorded as interrupted and the branch is at BEST.",
            err=True,
        )
        click.echo(
            f"  resume with: kernelopt run {program}" + (f" --tag {tag}" if tag else ""), err=True
        )
        sys.exit(interrupts.exit_code(exc, EXIT_CTRL_C))


def _from_head(prog: Program) -> Program:
    """The program as committed at HEAD, with a one-line warning naming what is ignored."""
    from kernelopt.checkout import read_from_head

    try:
        prog, warning = read_from_head(prog)
    except ProgramError as exc:
        raise UsageProblem(f"the program as committed at HEAD: {exc}") from None
    if warning:
        click.echo(f"kernelopt: warning: {warning}", err=True)
    return prog


@click.command(name="try")
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
    help="The run's program file; it is always read as the run's start commit holds it.",
)
@click.option(
    "--kind",
    type=click.Choice(["edit", "agent"]),
    default="edit",
    show_default=True,
    help="How the change was made.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def try_command(hypothesis: str, program_path: str | None, kind: str, as_json: bool) -> None:
    """Evaluate the worktree's uncommitted change as one candidate.

    Run it inside a run's worktree after each edit. kernelopt commits the
    change, measures it, keeps it (BEST moves) or reverts the worktree to
    BEST, and prints the verdict and the counters.

    \b
    Exit codes:
      0 keep, 10 tie, 11 regression, 12 incorrect, 13 failed, 14 diverged,
      15 interrupted, 16 refused (the change touches a fixed path: the program,
      performance.md, the benchmark; see target.fixed), 20 the run has stopped
      (stop now), 2 usage or program error, 4 a fault of kernelopt's own storage,
      lock or host (the attempt stays pending).

    \b
    Example:
      cd "$(kernelopt status --json | jq -r .worktree)"
      $EDITOR ir/cpu_stencil/knobs.json
      kernelopt try -m "a larger block keeps the tile in L1" --json
    """
    if (why := hypothesis_problem(hypothesis)) is not None:
        raise UsageProblem(f"-m: {why}; the hypothesis is recorded in a commit message")
    try:
        repo_root, run_id = current_run(Path.cwd())
        named = Path(program_path) if program_path else None
        prog = program_for_run(repo_root, run_id, named)
        session = Session.attach(prog, repo_root, run_id, reporter=_WarningsToStderr())
    except (SessionError, HistoryError, ProgramError) as exc:
        raise UsageProblem(str(exc)) from None
    runner = session.runner
    with _try_failures(as_json), interrupts.as_interrupts(), runner.locked():
        runner.open(agent_mode=True)
        with _interrupted_in_flight(as_json):
            result = runner.try_worktree(hypothesis, kind)
        reason = result.stop_reason if result.stop else runner.stop_if_due()
        worktree = _after_try(runner, result, stopping=bool(reason))
        edits = edits_made_while_measuring(runner.repo, put_back=True)
    data = result.to_json()
    data["stop"] = bool(reason)
    data["stop_reason"] = reason
    data["worktree"] = worktree
    data["edits"] = edits
    if as_json:
        click.echo(json.dumps(data))
    else:
        click.echo(f"#{result.attempt} {format_result(result, prog.metric)}")
        click.echo(f"  worktree: {TRY_WORKTREE_HELP[worktree]}")
        for e in edits:
            click.echo(f"  {e['message']}")
        if reason:
            click.echo(f"kernelopt: the run has stopped: {reason}")
    sys.exit(EXIT_STOP if reason else exit_code_of(result.verdict))


@contextmanager
def _interrupted_in_flight(as_json: bool) -> Iterator[None]:
    """``try`` interrupted while it measures: the attempt is recorded as interrupted."""
    try:
        yield
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP
        message = f"{interrupts.reason(exc)}; the attempt is recorded as interrupted and the worktree is at BEST"
        click.echo(
            json.dumps({"verdict": "interrupted", "stop": False, "reason": message})
            if as_json
            else f"kernelopt: {message}"
        )
        sys.exit(exit_code_of("interrupted"))


@contextmanager
def _try_failures(as_json: bool) -> Iterator[None]:
    """How ``try`` ends without a verdict: the run is busy, the worktree cannot go back
    on its branch, kernelopt's own fault, nothing to try, an interrupt with no attempt
    in flight, or the run has stopped (under --json each says so as JSON)."""
    try:
        yield
    except RunBusy as exc:
        raise RunInUse(str(exc)) from None
    except HistoryError as exc:  # e.g. a worktree kernelopt cannot put back on its branch
        raise UsageProblem(str(exc)) from None
    except (Fault, OSError) as exc:
        fault = OwnFault.of(exc)  # under --json an agent learns it is no verdict
        fault.payload = {"verdict": None, "fault": str(exc), "stop": False}  # type: ignore[attr-defined]
        raise fault from None
    except NothingToTry as exc:
        problem = UsageProblem(str(exc))
        problem.kind = "nothing_to_try"  # type: ignore[attr-defined]
        raise problem from None
    except KeyboardInterrupt as exc:  # before or after the attempt: nothing in flight
        message = f"{interrupts.reason(exc)}; no attempt was in flight"
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "verdict": None,
                        "stop": False,
                        "error": {"kind": "interrupted", "message": message},
                    }
                )
            )
        click.echo(f"kernelopt: {message}", err=True)
        sys.exit(exit_code_of("interrupted"))
    except RunStopped as exc:
        if as_json:
            error = {"kind": "stopped", "message": str(exc), "exit_code": EXIT_STOP}
            stopped = {"verdict": None, "stop": True, "stop_reason": str(exc), "error": error}
            click.echo(json.dumps(stopped))
        else:
            click.echo(f"kernelopt: {exc}. Stop working on this run.")
        sys.exit(EXIT_STOP)


class _WarningsToStderr:
    """``try``'s reporter: its answer is the verdict; what was repaired goes to stderr."""

    def event(self, name: str, **data: object) -> None:
        if name == "warning":
            click.echo(f"kernelopt: warning: {data['message']}", err=True)


# What ``try`` left in the worktree, as its answer says it, and what that means.
TRY_WORKTREE_HELP = {
    "at the new BEST": "at the new BEST: build on it",
    "reverted to BEST": "reverted to BEST: the change is in the attempt's commit",
    "change kept to repair": (
        "the incorrect change is back as an uncommitted edit on top of BEST: repair it "
        "and try again (`git stash -u` sets it aside)"
    ),
    "change kept without fixed paths": (
        "the change is back as an uncommitted edit on top of BEST, without the fixed "
        "paths it touched: try it again as it is"
    ),
}


def _after_try(runner: Runner, result: AttemptResult, *, stopping: bool) -> str:
    """Leave an incorrect change in the worktree to repair; say what the worktree holds."""
    if result.verdict == "keep":
        return "at the new BEST"
    if result.verdict == "incorrect" and not stopping:
        runner.repo.bring_back(result.commit)
        return "change kept to repair"
    if result.verdict == "refused" and not stopping:
        runner.repo.bring_back(result.commit)
        drop_changes(runner.repo, runner.committer.refused_paths(result.commit, runner.state))
        return "change kept without fixed paths"
    return "reverted to BEST"


@click.command(name="status")
@click.option(
    "--run",
    "run_id",
    callback=checked_name,
    help="The run (default: the worktree you are in, or the only run).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status_command(run_id: str | None, as_json: bool) -> None:
    """Where a run stands: BEST_COMMIT, its metric, attempts and counters.

    \b
    Example:
      kernelopt status
      kernelopt status --run matmul-nov22 --json
    """
    repo = _run_repo(run_id)
    state = repo.load_state()
    _warn(state.warnings)
    data = status_view(repo, state)
    if as_json:
        click.echo(json.dumps(data, indent=1))
        return
    for line in status_lines(data):
        click.echo(line)


def _warn(warnings: list[str]) -> None:
    """Problems with a run's records, on stderr (the answer on stdout stays readable)."""
    for warning in warnings:
        click.echo(f"kernelopt: warning: {warning}", err=True)


def _run_repo(run_id: str | None) -> RunRepo:
    """The run named, the one whose worktree we are in, or the repository's only run."""
    try:
        return RunRepo(*resolve_run(Path.cwd(), run_id))
    except (SessionError, HistoryError) as exc:
        raise UsageProblem(str(exc)) from None


@click.command(name="log")
@click.option(
    "--run",
    "run_id",
    callback=checked_name,
    help="The run (default: the worktree you are in, or the only run).",
)
@click.option(
    "--lessons",
    "lessons_only",
    is_flag=True,
    help="What was learned: kept, regressed, failed ideas and why.",
)
@click.option("--plain", is_flag=True, help="One plain line per attempt, no table or colours.")
@click.option(
    "--screened",
    is_flag=True,
    help="The candidates screening estimated on sim and did not measure (search.screen).",
)
@click.option(
    "--wide",
    is_flag=True,
    help="Whole hypotheses and each verdict's reason; lines may be longer than the terminal.",
)
@click.option("--json", "as_json", is_flag=True, help="Every attempt as a JSON list.")
def log_command(  # noqa: PLR0913 - one parameter per option
    run_id: str | None, lessons_only: bool, plain: bool, screened: bool, wide: bool, as_json: bool
) -> None:
    """Every attempt of a run, kept or not, with verdicts and numbers.

    Discarded attempts stay reachable: `git checkout <commit>` shows one.

    \b
    Example:
      kernelopt log
      kernelopt log --run cpu_stencil-nov22 --json
      kernelopt log --lessons
      kernelopt log --wide | less -S
      kernelopt log --screened
    """
    if screened:
        from kernelopt.proposers.screen import ScreenLog, screened_lines

        repo = _run_repo(run_id)
        rows = ScreenLog.of_run(repo.common_dir, repo.run_id).screened_out()
        click.echo(json.dumps(rows, indent=1) if as_json else "\n".join(screened_lines(rows)))
        return
    state = _run_repo(run_id).load_state()
    _warn(state.warnings)
    if lessons_only:
        data = lessons([Observation.of(r) for r in state.attempts])
        click.echo(
            json.dumps(data, indent=1) if as_json else (render_lessons(data) or "no lessons yet")
        )
        return
    print_log(log_rows(state), as_json=as_json, plain=plain, wide=wide)
