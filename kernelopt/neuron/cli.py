"""`kernelopt fake-trn2`: install the fake Trainium2 toolchain and print how to enable it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kernelopt.testing.fake_trn2 import DEFAULT_HOME, SDK_ALIASES, SDK_STYLES, FakeTrn2

_HOME = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"where the wrappers and settings live (default {DEFAULT_HOME})",
)


def _toolchain(home: Path | None, sdk: str | None = None) -> FakeTrn2:
    return FakeTrn2((home or DEFAULT_HOME).expanduser().resolve()).install(sdk=sdk)


@click.group("fake-trn2")
def fake_trn2_group() -> None:
    """A fake Trainium2 toolchain (neuron-ls, neuron-monitor, neuron-explorer or
    neuron-profile, neuronx-cc, and the SDK's Python packages), written from the
    Neuron documentation, for dry runs of a device.kind neuron setup on any
    machine. Its device is a model of its own, not kernelopt's simulator.

    It is active only in a shell that evaluates the lines `env` prints.

    \b
    Example:
      eval "$(kernelopt fake-trn2 env)"
      neuron-ls --output-format json
    """


@fake_trn2_group.command("env")
@_HOME
@click.option(
    "--sdk",
    type=click.Choice((*SDK_STYLES, *SDK_ALIASES)),
    default=None,
    help="current: nki.compiler API, neuron-explorer, nrtpy in an environment of its own "
    "(HOME/activate-runtime); older: nki_standalone, neuron-profile, one environment "
    "(default: as installed before, else older)",
)
def env_command(home: Path | None, sdk: str | None) -> None:
    """Install the fake and print the `export` lines that enable it.

    The same lines are written to HOME/activate, usable as
    device.neuron.activate in a program; with the current SDK layout,
    HOME/activate-runtime is the nrtpy environment
    (device.neuron.runtime_activate).

    \b
    Example:
      eval "$(kernelopt fake-trn2 env --home /tmp/trn2 --sdk older)"
    """
    click.echo(_toolchain(home, sdk).export_lines(), nl=False)


@fake_trn2_group.command("set")
@_HOME
@click.argument("assignments", nargs=-1, required=True)
def set_command(home: Path | None, assignments: tuple[str, ...]) -> None:
    """Change the fake's behaviour with NAME=JSON pairs.

    Names: compile_delay_s, compile_error, run_error, device_fault, busy,
    neuron_ls_format, devices, lnc, unavailable, noise_pp, ... (see
    `kernelopt fake-trn2 show`).

    \b
    Example:
      kernelopt fake-trn2 set compile_delay_s=2 'busy={"0": 4242}'
      kernelopt fake-trn2 set 'compile_error="Out of memory in psum"'
    """
    settings = {}
    for item in assignments:
        name, sep, text = item.partition("=")
        if not sep:
            raise click.ClickException(f"{item!r}: expected NAME=VALUE (VALUE in JSON)")
        try:
            settings[name] = json.loads(text)
        except json.JSONDecodeError:
            settings[name] = text  # a bare word is a string
    try:
        _toolchain(home).configure(**settings)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None


@fake_trn2_group.command("show")
@_HOME
def show_command(home: Path | None) -> None:
    """Print the fake's settings as JSON (defaults merged with changes).

    \b
    Example:
      kernelopt fake-trn2 show
    """
    click.echo(json.dumps(_toolchain(home).settings(), indent=2))
