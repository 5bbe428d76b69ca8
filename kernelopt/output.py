"""How the commands print: progress lines for people, one JSON object per event for programs.

The data comes from the library (records.py, views.py); this module only
turns it into text.
"""

from __future__ import annotations

import json
from typing import Any

import click

from kernelopt.records import AttemptResult, RunSummary


class Printer:
    """A run's progress as lines for people, or one JSON object per event for programs."""

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
            elif name in ("waiting", "host_fault", "stale_lock", "reaped"):
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
            self._attempt(data["result"])
        else:
            self._close()
            click.echo(_notice(name, data))

    def _attempt(self, r: AttemptResult) -> None:
        if self.open_line == r.attempt:
            click.echo(" " + format_result(r, self.metric))
            self.open_line = None
        else:
            self._close()
            click.echo(
                f"  {_label(r.attempt, r.kind)}: {r.hypothesis} ... {format_result(r, self.metric)}"
            )


def _notice(name: str, data: dict[str, Any]) -> str:
    if name == "agent":
        what = {"repair": f"repairing #{data['attempt']}", "split": f"splitting #{data['attempt']}"}
        return f"  agent round ({what.get(data['mode'], 'improve')})"
    if name == "waiting":
        return (
            f"  no idle device ({data['reason']}); waited {data['waited_s']:.0f}s, "
            f"next look in {data['next_poll_s']:.0f}s"
        )
    if name == "reaped":
        return f"  killed process group {data['pgid']}: a benchmark a killed kernelopt process left running"
    if name == "stale_lock":
        return f"  removed {data['path']} (a git lock left by a killed kernelopt process)"
    if name == "host_fault":
        return f"  host fault on #{data['attempt']}, retrying on another device: {data['error']}"
    return f"  {name}: {data}"


def _label(attempt: int, kind: str) -> str:
    return "baseline" if kind == "baseline" else f"#{attempt} {kind}"


def format_metric(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def format_result(r: AttemptResult, metric: str) -> str:
    """One attempt's verdict line."""
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


def print_summary(s: RunSummary, as_json: bool, program: str) -> None:
    """How a run ended, and where to look at it."""
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


def status_lines(data: dict[str, Any]) -> list[str]:
    """``kernelopt status`` for people, from views.status_view."""
    stopped = f"  (stopped: {data['stop_reason']})" if data["stopped"] else ""
    lines = [
        f"run        {data['run']}{stopped}",
        f"worktree   {data['worktree']}",
        f"branch     {data['branch']}",
        f"BEST       {(data['best_commit'] or '')[:10]} (attempt #{data['best_attempt']})",
        f"best       {data['metric']} {format_metric(data['best_metric'])}  "
        f"baseline {format_metric(data['baseline_metric'])}",
    ]
    ref = data["reference"]
    if ref:
        value = format_metric(ref["metric"]) if ref["metric"] is not None else f"n/a ({ref['why']})"
        lines.append(f"reference  {ref['what']}: {value}")
    lines.append(f"attempts   {data['attempts']}")
    lines.append(f"regressions in a row {data['consecutive_regressions']}")
    for r in data["recent_regressions"]:
        gain = (r.get("gain") or 0) * 100
        lines.append(f"  #{r.get('attempt')} {r.get('hypothesis')} ({gain:+.2f}%)")
    return lines


def plain_log_lines(rows: list[dict[str, Any]]) -> list[str]:
    """``kernelopt log --plain``: one line per attempt, its error below it."""
    lines = []
    for row in rows:
        gain = "" if row["gain"] is None else f"{row['gain'] * 100:+7.2f}%"
        lines.append(
            f"#{row['attempt']:<4} {row['commit'][:10]} {row['verdict']:<11} "
            f"{format_metric(row['metric']):>10} {gain:>8}  {row['kind']}: {row['hypothesis']}"
        )
        if row["error"]:
            lines.append(f"      {row['error'].splitlines()[0][:200]}")
    return lines
