"""The command target: measure a commit by running any benchmark command in its tree.

The command runs with ``bash -c`` in the tree root, in its own process group so
that a timeout (or a straggler left behind by a finished benchmark) takes down
every process it started; a daemon that left the group (``setsid``) is found by
the mark in its environment and killed too (kernelopt/hosts/children.py). Its results come from a CSV/JSON file it writes or
from ``key: value`` lines it prints; each row is checked with the program's
correctness expression, and the metric is aggregated as the mean over rows.
Every outcome, including crashes and timeouts, is returned as a Measurement.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import kernelopt.hosts.children as children
from kernelopt.measurement import FAILED, INCORRECT, OK, TIMEOUT, Fault, Measurement
from kernelopt.targets.expr import Expression, ExpressionError, parse_expression
from kernelopt.targets.results import (
    ResultsError,
    Row,
    class_key,
    classes_of,
    metric_values,
    newest_fresh,
    parse_stdout,
    read_csv,
    read_json,
    snapshot,
)

if TYPE_CHECKING:
    from kernelopt.hosts.base import Host

FORMATS = ("csv", "json", "stdout")
BETTER = ("higher", "lower")
LOG_TAIL_LINES = 40
# How long a process group gets to exit after SIGTERM before SIGKILL.
KILL_GRACE_S = 2.0


@dataclass(frozen=True)
class CommandRun:
    """What running a command produced: exit status (None after a timeout) and output."""

    returncode: int | None
    output: str
    duration_s: float
    timed_out: bool = False


# runner(command, cwd, extra_env, timeout_s): the extra env only, so that a remote
# host can merge it with its own environment.
Runner = Callable[[str, Path, Mapping[str, str], float], CommandRun]


def run_local(command: str, cwd: Path, env: Mapping[str, str], timeout_s: float) -> CommandRun:
    """Run ``command`` with bash in ``cwd``; kill its whole process group on timeout."""
    mark = children.new_mark()
    full_env = {**os.environ, **env, children.MARK: children.marked_env(mark)}
    # Output goes to a file, not a pipe: a background child that keeps a pipe
    # open would otherwise make reading block until the timeout.
    try:
        out_file = tempfile.TemporaryFile()
    except OSError as exc:  # kernelopt's own scratch space, not the benchmark
        raise Fault(f"cannot make a file for the benchmark's output: {exc}") from None
    with out_file as out:
        start = time.monotonic()
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            children.started(proc.pid, mark)  # may raise Fault: the finally kills the benchmark
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        finally:
            # Stragglers must not outlive the measurement: they would disturb the
            # next candidate's timing. Daemons that left the group carry the mark.
            _kill_group(proc.pid, signal.SIGKILL)
            proc.wait()
            children.kill_marked(mark)
            children.ended(proc.pid)
        duration = time.monotonic() - start
        out.seek(0)
        output = out.read().decode("utf-8", errors="replace")
    return CommandRun(
        returncode=None if timed_out else proc.returncode,
        output=output,
        duration_s=duration,
        timed_out=timed_out,
    )


def host_runner(host: Host) -> Runner:
    """A runner that runs the command through a Host, with ``cwd`` a path on that host.

    CSV/JSON results are still read from the local ``tree``: with a remote host,
    use stdout results or bring the files back before they are read.
    """

    def run(command: str, cwd: Path, env: Mapping[str, str], timeout_s: float) -> CommandRun:
        result = host.run(["bash", "-c", command], env=dict(env), cwd=str(cwd), timeout=timeout_s)
        output = result.stdout + (result.stderr if result.stderr else "")
        return CommandRun(
            returncode=None if result.timed_out else result.returncode,
            output=output,
            duration_s=result.duration_s,
            timed_out=result.timed_out,
        )

    return run


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass(frozen=True)
class ResultsSpec:
    """Where the rows come from: a CSV or JSON file (glob relative to the tree) or stdout."""

    format: str
    path: str | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(
                f"results.format must be one of {', '.join(FORMATS)}, got {self.format!r}"
            )
        if self.format != "stdout" and not self.path:
            raise ValueError(f"results.path is required for format {self.format!r}")
        if self.path and (Path(self.path).is_absolute() or ".." in Path(self.path).parts):
            raise ValueError(f"results.path must stay inside the tree, got {self.path!r}")


@dataclass(frozen=True)
class CommandTarget:
    """A benchmark command whose rows carry ``metric``; see the module docstring.

    The program's metric is the mean of ``metric`` over all rows; per config
    class means (classes from ``config_columns``) go to ``extra["classes"]`` and
    their row counts to ``extra["class_rows"]``.
    """

    command: str
    metric: str
    better: str
    results: ResultsSpec
    correct: str | None = None
    config_columns: tuple[str, ...] = ()
    timeout_s: float = 600.0
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    check: Expression | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("command must not be empty")
        if not self.metric:
            raise ValueError("metric must name a result column")
        if self.better not in BETTER:
            raise ValueError(f"better must be 'higher' or 'lower', got {self.better!r}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout must be positive, got {self.timeout_s}")
        object.__setattr__(self, "config_columns", tuple(self.config_columns))
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        if self.correct is not None:
            try:
                object.__setattr__(self, "check", parse_expression(self.correct))
            except ExpressionError as exc:
                raise ValueError(f"correct: {exc}") from None

    def measure(
        self,
        tree: Path,
        env: Mapping[str, str] | None = None,
        runner: Runner | None = None,
    ) -> Measurement:
        """Run the command on ``tree`` and turn whatever happened into one Measurement."""
        tree = Path(tree)
        before = snapshot(tree, self.results.path) if self.results.path else {}
        try:
            run = (runner or run_local)(
                self.command, tree, {**self.env, **(env or {})}, self.timeout_s
            )
        except (OSError, RuntimeError) as exc:
            # RuntimeError covers a host whose transport failed (kernelopt.hosts.HostError).
            return Measurement.failure(FAILED, f"could not run {self.command!r} in {tree}: {exc}")
        tail = _tail(run.output)
        common: dict[str, Any] = {"log_tail": tail, "duration_s": run.duration_s}
        if run.timed_out:
            return Measurement.failure(
                TIMEOUT, f"command timed out after {self.timeout_s:g} s: {self.command}", **common
            )
        if run.returncode != 0:
            return Measurement.failure(
                FAILED, f"{_exit_text(run.returncode)}: {self.command}", **common
            )
        try:
            rows, source = self._read_rows(tree, before, run.output)
            values = metric_values(rows, self.metric, source)
            classes = classes_of(rows, self.config_columns, self.metric)
            failing = self._failing_rows(rows)
        except (ResultsError, ExpressionError) as exc:
            return Measurement.failure(FAILED, str(exc), **common)
        extra = {
            "classes": {k: c["mean"] for k, c in classes.items()},
            "class_rows": {k: int(c["count"]) for k, c in classes.items()},
            "results_file": source,
            "timing": "benchmark",  # the benchmark's own figures, read from its results
        }
        if failing:
            return Measurement.failure(INCORRECT, failing, rows=rows, extra=extra, **common)
        return Measurement(
            status=OK,
            metrics={self.metric: sum(values) / len(values)},
            rows=rows,
            extra=extra,
            **common,
        )

    def _read_rows(
        self, tree: Path, before: Mapping[Path, Any], output: str
    ) -> tuple[tuple[Row, ...], str]:
        if self.results.format == "stdout":
            return parse_stdout(output), "stdout"
        assert self.results.path is not None
        path = newest_fresh(tree, self.results.path, before)
        reader = read_csv if self.results.format == "csv" else read_json
        return reader(path), str(path.relative_to(tree))

    def _failing_rows(self, rows: Sequence[Row]) -> str:
        """An error naming every row where the correctness expression is false, or ''."""
        if self.check is None:
            return ""
        bad = [(i, row) for i, row in enumerate(rows) if not self.check.holds(row)]
        if not bad:
            return ""
        shown = [self._describe(i, row) for i, row in bad[:10]]
        more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
        return (
            f"correctness check {self.correct!r} failed on {len(bad)} of {len(rows)} rows: "
            + "; ".join(shown)
            + more
        )

    def _describe(self, index: int, row: Row) -> str:
        assert self.check is not None
        where = class_key(row, self.config_columns) if self.config_columns else f"row {index}"
        values = ", ".join(f"{n}={row.get(n)!r}" for n in sorted(self.check.names))
        return f"{where} ({values})"


def _exit_text(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"command was killed by {name}"
    return f"command exited with status {returncode}"


def _tail(output: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(output.splitlines()[-lines:])
