"""Exit codes of the kernelopt commands, and the CLI errors that carry them.

``kernelopt try`` answers with its verdict's code so that an agent's shell
can branch on it; every other failure a user can cause is an error with a
message and a code, never a traceback.
"""

from __future__ import annotations

import json
from typing import IO, Any

import click

from kernelopt.decide import Verdict
from kernelopt.names import name_problem

EXIT_FOR_VERDICT = {
    Verdict.KEEP: 0,
    Verdict.TIE: 10,
    Verdict.REGRESSION: 11,
    Verdict.INCORRECT: 12,
    Verdict.FAILED: 13,
    Verdict.DIVERGED: 14,
    Verdict.INTERRUPTED: 15,
    Verdict.REFUSED: 16,  # changed a fixed path: not measured; undo that part and try again
}
EXIT_STOP = 20  # the run has stopped: an agent stops working on it
EXIT_USAGE = 2  # a bad program, option or repository state
EXIT_BUSY = 3  # another kernelopt process holds the run
EXIT_FAULT = 4  # kernelopt's own storage, lock or host failed: the attempt stays pending
EXIT_CTRL_C = 130  # a run interrupted by Ctrl-C (the shell's convention)


class CliError(click.ClickException):
    """An error a user can act on: printed as ``kernelopt: <message>``, exit ``exit_code``."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"kernelopt: {self.format_message()}", err=True, file=file)


class UsageProblem(CliError):
    """The program, an option or the repository is not what the command needs."""

    exit_code = EXIT_USAGE


class OwnFault(CliError):
    """kernelopt's own storage, lock or host failed; no verdict was recorded."""

    exit_code = EXIT_FAULT

    @classmethod
    def of(cls, exc: BaseException) -> OwnFault:
        """Said as what it is, never as a verdict on the candidate."""
        return cls(
            f"{exc}\n  a fault of kernelopt's own storage, lock or host, not of the candidate: "
            "no verdict is recorded, the attempt in flight stays pending and is measured by "
            "the next `kernelopt run` or `kernelopt try` once this is fixed"
        )


class RunInUse(CliError):
    """Another kernelopt process holds the run."""

    exit_code = EXIT_BUSY


def exit_code_of(verdict: str) -> int:
    """``kernelopt try``'s exit code for a verdict (failed for anything unknown)."""
    return EXIT_FOR_VERDICT.get(verdict, EXIT_FOR_VERDICT[Verdict.FAILED])  # type: ignore[call-overload]


class JsonErrorsGroup(click.Group):
    """A command group whose commands, given --json, answer a refusal with JSON too:
    ``{"error": {"kind", "message", "exit_code"}}`` on stdout (the message also on stderr)."""

    def invoke(self, ctx: click.Context) -> Any:
        args = [*getattr(ctx, "_protected_args", []), *ctx.args]
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if "--json" not in args:
                raise
            exc.show()
            # fields the command adds (e.g. try's "verdict": null), then the error
            click.echo(json.dumps({**getattr(exc, "payload", {}), "error": error_object(exc)}))
            ctx.exit(exc.exit_code)


def error_object(exc: click.ClickException) -> dict[str, Any]:
    """What a refusal says to a program: its kind, message and exit code."""
    kinds = {"UsageProblem": "usage", "RunInUse": "busy", "CliError": "error", "OwnFault": "fault"}
    kind = getattr(exc, "kind", None) or kinds.get(type(exc).__name__, "usage")
    return {"kind": kind, "message": exc.format_message(), "exit_code": exc.exit_code}


def checked_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A --tag, --name or --run that can be part of a git ref, else a usage error (exit 2)."""
    if value is not None and (why := name_problem(value)) is not None:
        raise click.BadParameter(f"{value!r}: {why}")
    return value
