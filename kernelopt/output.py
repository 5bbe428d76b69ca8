"""How the commands print: progress lines for people, one JSON object per event for programs.

The data comes from the library (records.py, views.py); this module only
turns it into text.
"""

from __future__ import annotations

import json
import time
from typing import Any

import click

from kernelopt.note import describe_basis
from kernelopt.progress import ScreenTicker
from kernelopt.records import AttemptResult, RunSummary


class Printer:
    """A run's progress as lines for people, or one JSON object per event for programs."""

    def __init__(
        self,
        as_json: bool,
        metric: str = "",
        budget: int | None = None,
        limit: int | None = None,
    ):
        self.as_json = as_json
        self.metric = metric
        # The last attempt number this invocation may reach: the run's candidate
        # budget (stop.max_candidates), or sooner with --max-candidates (``limit``).
        self.budget = budget
        self.limit = limit
        self.open_line: int | None = None  # the attempt whose line awaits its verdict
        self.started = time.monotonic()
        self.measured = 0  # attempts decided in this invocation

    def _close(self) -> None:
        if self.open_line is not None:
            click.echo("")
            self.open_line = None

    def event(self, name: str, **data: Any) -> None:
        if self.as_json:
            if name == "attempt":
                click.echo(json.dumps({"event": "attempt", **data["result"].to_json()}))
            elif name in (
                "waiting",
                "host_fault",
                "stale_lock",
                "reaped",
                "resuming",
                "warning",
                "screening",
            ):
                click.echo(json.dumps({"event": name, **data}))
            return
        if name == "measuring":
            self._bound(data["attempt"], data["kind"])
            self._close()
            label = _label(data["attempt"], data["kind"], self.budget)
            click.echo(f"  {label}: {data['hypothesis']} ...", nl=False)
            self.open_line = data["attempt"]
        elif name == "sample":
            click.echo(".", nl=False)
        elif name == "attempt":
            self._attempt(data["result"])
        else:
            self._close()
            click.echo(_notice(name, data))

    def _bound(self, attempt: int, kind: str) -> None:
        """At the first candidate of this invocation, --max-candidates fixes the last number."""
        if self.limit is None or kind == "baseline":
            return
        last = attempt + self.limit - 1
        self.budget = last if self.budget is None else min(self.budget, last)
        self.limit = None

    def _attempt(self, r: AttemptResult) -> None:
        self.measured += 1
        first, nl, rest = format_result(r, self.metric).partition("\n")
        line = first + self._progress(r.attempt) + nl + rest  # the time on the verdict's line
        if self.open_line == r.attempt:
            click.echo(" " + line)
            self.open_line = None
        else:
            self._close()
            click.echo(f"  {_label(r.attempt, r.kind, self.budget)}: {r.hypothesis} ... {line}")

    def _progress(self, attempt: int) -> str:
        """`` [1m05s, ~4m left]``: time so far in this invocation, and the budget's rest."""
        elapsed = time.monotonic() - self.started
        text = f" [{format_duration(elapsed)}"
        if self.budget is not None and attempt > 0:
            left = max(self.budget - attempt, 0)
            text += f", ~{format_duration(elapsed / self.measured * left)} left"
        return text + "]"


def _notice(name: str, data: dict[str, Any]) -> str:
    if name == "agent":
        what = {"repair": f"repairing #{data['attempt']}", "split": f"splitting #{data['attempt']}"}
        return f"  agent round ({what.get(data['mode'], 'improve')})"
    if name == "waiting":
        return (
            f"  no idle device ({data['reason']}); waited {data['waited_s']:.0f}s, "
            f"next look in {data['next_poll_s']:.0f}s"
        )
    if name == "resuming":
        best = (
            f"BEST #{data['best_attempt']} {format_metric(data['best_metric'])}"
            if data["best_attempt"] is not None
            else "no BEST yet"
        )
        pending = data.get("pending") or []
        finishing = (
            f" (#{', #'.join(map(str, pending))} committed before the stop, measured first)"
            if pending
            else ""
        )
        return (
            f"  resuming at #{data['next']}{finishing}: {best}, "
            f"{data['consecutive_regressions']} regression(s) in a row"
        )
    if name == "warning":
        return f"  warning: {data['message']}"
    if name == "screening":
        return "  " + screen_line(data["phase"], data["done"], data["total"], data["seconds"])
    if name == "reaped":
        return f"  killed process group {data['pgid']}: a benchmark a killed kernelopt process left running"
    if name == "stale_lock":
        return f"  removed {data['path']} (a git lock left by a killed kernelopt process)"
    if name == "host_fault":
        return f"  host fault on #{data['attempt']}, retrying on another device: {data['error']}"
    return f"  {name}: {data}"


def _label(attempt: int, kind: str, budget: int | None = None) -> str:
    if kind == "baseline":
        return "baseline"
    return f"#{attempt} of {budget} {kind}" if budget else f"#{attempt} {kind}"


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h10m``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def format_metric(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def format_result(r: AttemptResult, metric: str) -> str:
    """One attempt's verdict line: the compared pair first, BEST's figure, then why.

    ``KEEP +12.88%: time 21.74 vs BEST 24.95 measured beside it (7 pairs) |
    BEST now 21.74 (was 23.98) | regressions 0``, and below it the rule that decided.
    """
    verdict = r.verdict.upper()
    if r.gain is None:
        parts = [verdict, f"{metric} {format_metric(r.metric)}"]
    else:
        against = describe_basis(r.basis) or f"vs BEST {format_metric(r.previous_best)}"
        parts = [f"{verdict} {r.gain * 100:+.2f}%: {metric} {format_metric(r.metric)} {against}"]
    if r.verdict == "keep":
        parts.append(
            f"BEST now {format_metric(r.best_metric)} (was {format_metric(r.previous_best)})"
        )
    elif r.verdict != "baseline" and (r.basis or {}).get("against") == "remeasured":
        parts.append(f"BEST {format_metric(r.best_metric)}")
    if r.verdict != "baseline":
        parts.append(f"regressions {r.consecutive_regressions}")
    if r.reused_from is not None:
        parts.append(f"same tree as #{r.reused_from}")
    if r.improved or r.regressed:
        parts.append(f"improved [{', '.join(r.improved)}] regressed [{', '.join(r.regressed)}]")
    text = " | ".join(parts)
    first_error = r.error.strip().splitlines()[0][:200] if r.error.strip() else ""
    if r.reason and r.verdict != "baseline" and not (first_error and first_error in r.reason):
        text += f"\n      why: {r.reason}"
    if r.error:
        text += f"\n      {r.error.splitlines()[0][:300]}"
    tail = [line for line in r.output_tail.splitlines() if line.strip()][-TAIL_SHOWN:]
    if tail and r.error.strip().splitlines()[-1:] != tail[-1:]:
        text += "".join(f"\n      | {line[:200]}" for line in tail)
    return text


# The last lines of a failed benchmark's output shown under its verdict (all are in --json).
TAIL_SHOWN = 8


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
    best = f"BEST {s.best_commit[:10]}, attempt #{s.best_attempt}" if s.best_commit else "no BEST"
    click.echo(f"  branch   {s.branch}  ({best})")
    click.echo("  look at it:")
    since = f"{s.baseline_commit[:10]}^.." if s.baseline_commit else ""
    click.echo(f"    git log --oneline {since}{s.branch}   # the baseline and each kept change")
    click.echo(f"    kernelopt log --run {s.run_id}")
    click.echo(f"    kernelopt report {s.run_id}")
    if s.stopped:
        click.echo("  this run has stopped; start a new one with a new tag:")
        click.echo(f"    kernelopt run {program} --tag <new-tag>")


def status_lines(data: dict[str, Any]) -> list[str]:
    """``kernelopt status`` for people, from views.status_view."""
    stopped = f"  (stopped: {data['stop_reason']})" if data["stopped"] else ""
    lines = [
        f"run        {data['run']}{stopped}",
        f"worktree   {data['worktree']}",
        f"branch     {data['branch']}",
    ]
    if data["best_commit"]:
        lines += [
            f"BEST       {data['best_commit'][:10]} (attempt #{data['best_attempt']})",
            f"best       {data['metric']} {format_metric(data['best_metric'])}"
            + (
                f" (mean of {data['best_samples']} samples)"
                if data.get("best_samples", 0) > 1
                else ""
            )
            + f"  baseline {format_metric(data['baseline_metric'])}",
        ]
    else:
        lines.append("BEST       none yet: no attempt has been measured successfully")
    profile = _profile_line(data.get("best_profile") or {})
    if profile:
        lines.append(f"profile    {profile}")
    ref = data["reference"]
    if ref:
        value = format_metric(ref["metric"]) if ref["metric"] is not None else f"n/a ({ref['why']})"
        lines.append(f"reference  {ref['what']}: {value}")
    lines.append(f"attempts   {data['attempts']}")
    if data.get("calibration"):
        from kernelopt.proposers.live_calibration import live_summary

        lines.append(f"screening  {live_summary(data['calibration'])}")
    lines.append(f"regressions in a row {data['consecutive_regressions']}")
    for r in data["recent_regressions"]:
        gain = (r.get("gain") or 0) * 100
        lines.append(f"  #{r.get('attempt')} {r.get('hypothesis')} ({gain:+.2f}%)")
    return lines


# Profile fields worth a glance, in the order shown (the profiler's names).
_PROFILE_FIELDS = (
    ("mfu_estimated_percent", "MFU"),
    ("mbu_estimated_percent", "MBU"),
    ("tensor_engine_active_time_percent", "TensorE"),
    ("vector_engine_active_time_percent", "VectorE"),
    ("scalar_engine_active_time_percent", "ScalarE"),
    ("gpsimd_engine_active_time_percent", "GpSimd"),
    ("dma_active_time_percent", "DMA"),
)


def _profile_line(profile: dict[str, Any]) -> str:
    """``MFU 87.2% | TensorE 91.0% | DMA 40.1% | total 0.25 ms`` from BEST's profile."""
    parts = [
        f"{label} {profile[key]:.1f}%"
        for key, label in _PROFILE_FIELDS
        if isinstance(profile.get(key), int | float)
    ]
    total = profile.get("total_time")
    if isinstance(total, int | float):
        parts.append(f"total {total * 1e3:.4g} ms")
    return " | ".join(parts)


def plain_log_lines(rows: list[dict[str, Any]]) -> list[str]:
    """``kernelopt log --plain``: one line per attempt (with the BEST figure it was
    compared with), its reason, error and a failure's last output lines below it."""
    from kernelopt.report.table import compared_with

    lines = []
    for row in rows:
        gain = "" if row["gain"] is None else f"{row['gain'] * 100:+7.2f}%"
        against = compared_with(row)
        against = f"vs BEST {against}" if against else ""
        lines.append(
            f"#{row['attempt']:<4} {row['commit'][:10]} {row['verdict']:<11} "
            f"{format_metric(row['metric']):>10} {gain:>8} {against:<24} "
            f"{row['kind']}: {row['hypothesis']}".rstrip()
        )
        reason = row.get("reason") or ""
        error = row["error"].splitlines()[0][:200] if row["error"] else ""
        if reason and row["verdict"] != "baseline" and not (error and error in reason):
            lines.append(f"      why: {reason}")
        if error:
            lines.append(f"      {error}")
        tail = [t for t in (row.get("output_tail") or "").splitlines() if t.strip()]
        if tail and tail[-1].strip() != error.strip():
            lines += [f"      | {t[:200]}" for t in tail[-TAIL_SHOWN:]]
    return lines


def runs_lines(rows: list[dict[str, Any]]) -> list[str]:
    """``kernelopt runs`` for people: one line per run."""
    if not rows:
        return ["no runs recorded in this repository"]
    width = max(len("run"), *(len(r["run"]) for r in rows))
    lines = [f"{'run':<{width}}  {'BEST':<10}  {'best':>14}  {'attempts':<14}  state"]
    for r in rows:
        best = (r["best_commit"] or "")[:10] or "none"
        figure = f"{r['metric']} {format_metric(r['best_metric'])}" if r["best_commit"] else ""
        state = f"stopped: {r['stop_reason']}" if r["stopped"] else "open"
        attempts = f"{r['attempts']} ({r['kept']} kept)"
        lines.append(f"{r['run']:<{width}}  {best:<10}  {figure:>14}  {attempts:<14}  {state}")
    return lines


def print_log(rows: list[dict[str, Any]], *, as_json: bool, plain: bool, wide: bool) -> None:
    """``kernelopt log``: JSON, plain lines, or a table sized to the terminal (80 columns
    when piped) so that rows never wrap; ``wide`` shows everything."""
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    if plain:
        for line in plain_log_lines(rows):
            click.echo(line)
        return
    from rich.console import Console

    from kernelopt.report.table import render_log_table

    render_log_table(rows, Console(width=4000) if wide else Console(), wide=wide)


class ScreenProgress(ScreenTicker):
    """A line on stderr every few seconds while the screen draws and simulates a large
    pool (`kernelopt ir init`, `kernelopt init --kind nki`)."""

    def __init__(self) -> None:
        super().__init__(lambda *report: click.echo(screen_line(*report), err=True))


def screen_line(phase: str, done: int, total: int, seconds: float) -> str:
    """How far a screen is: drawing its pool, then simulating it."""
    if phase == "drawing":
        return f"drawing knob states to screen: {done} of {total} drawn ({seconds:.0f} s)"
    return f"screening on sim: {done} of {total} states simulated ({seconds:.0f} s)"
