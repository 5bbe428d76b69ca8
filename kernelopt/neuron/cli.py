"""`kernelopt fake-trn2`: install the fake Trainium2 toolchain and print how to enable it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kernelopt.neuron.sdk import PATHS
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
    help="the SDK layout, as it shipped: 2.26 (neuronxcc.nki, neuron-profile), 2.27 (both "
    "namespaces, neuron-explorer), 2.30 (nki with its compiler driver, no nrtpy), 2.32 (nrtpy in "
    "an environment of its own, HOME/activate-runtime); older = 2.27, current = 2.32 "
    "(default: as installed before, else 2.27)",
)
def env_command(home: Path | None, sdk: str | None) -> None:
    """Install the fake and print the `export` lines that enable it.

    The same lines are written to HOME/activate, usable as
    device.neuron.activate in a program; with the current SDK layout,
    HOME/activate-runtime is the nrtpy environment
    (device.neuron.runtime_activate).

    \b
    Example:
      eval "$(kernelopt fake-trn2 env --home /tmp/trn2 --sdk 2.30)"
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


@click.command("doctor")
@click.argument("host", required=False, default="localhost")
@click.option(
    "--program",
    "program_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="read device.python and device.neuron.* (activate scripts, lnc, sdk_path) from it",
)
@click.option("--activate", default=None, help="the NKI environment's activate script")
@click.option("--runtime-activate", default=None, help="the nrtpy environment's activate script")
@click.option("--python", "python", default=None, help="the host's Python (default python3)")
@click.option("--lnc", type=click.IntRange(1, 2), default=None, help="the LNC kernels run with")
@click.option(
    "--sdk-path",
    type=click.Choice(("auto", *PATHS)),
    default=None,
    help="force a measuring path, as device.neuron.sdk_path does",
)
@click.option("--ssh-config", default=None, help="ssh config file (default ~/.ssh/config)")
@click.option("--trust-new-hosts", is_flag=True, help="accept an ssh host key not yet known")
@click.option(
    "--tools-dir",
    multiple=True,
    help="a folder holding neuron-ls and neuron-monitor on the host (default /opt/aws/neuron/bin)",
)
@click.option("--json", "as_json", is_flag=True, help="print the findings as JSON")
def doctor_command(
    host: str,
    program_path: Path | None,
    activate: str | None,
    runtime_activate: str | None,
    python: str | None,
    lnc: int | None,
    sdk_path: str | None,
    ssh_config: str | None,
    trust_new_hosts: bool,
    tools_dir: tuple[str, ...],
    as_json: bool,
) -> None:
    """Say, for each step of a Trainium2 measurement (gate, compile, run, time,
    profile, baseline, check), what HOST has, which path kernelopt will take and
    what is missing, with the fix; with --program also whether the program's kernel
    can be shipped in an NKI namespace the host has (kernel). HOST is an ssh alias or
    localhost (default). Exits 1 when a required step has no path.

    \b
    Example:
      kernelopt doctor gym-3 --program programs/matmul.md
      kernelopt doctor --activate ~/venvs/nki/bin/activate \\
          --runtime-activate ~/venvs/nrtpy/bin/activate --json
    """
    from dataclasses import replace

    from kernelopt.devices.neuron import NeuronGate
    from kernelopt.hosts.open import open_hosts
    from kernelopt.neuron.doctor import diagnose
    from kernelopt.program import NeuronConfig, ProgramError, load_program

    settings, default_python, program = NeuronConfig(), "python3", None
    if program_path is not None:
        if not program_path.is_file():
            raise click.ClickException(f"{program_path}: no such program file")
        try:
            program = load_program(program_path)
        except (ProgramError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None
        settings, default_python = program.device.neuron, program.device.python
        ssh_config = ssh_config or program.device.ssh_config
        trust_new_hosts = trust_new_hosts or program.device.trust_new_hosts
    changes = {
        "activate": activate,
        "runtime_activate": runtime_activate,
        "lnc": lnc,
        "sdk_path": sdk_path,
    }
    settings = replace(settings, **{k: v for k, v in changes.items() if v is not None})
    try:
        (opened,) = open_hosts([host], ssh_config=ssh_config, trust_new_hosts=trust_new_hosts)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        gate = NeuronGate(search_path=tools_dir) if tools_dir else NeuronGate()
        report = diagnose(opened, settings, python or default_python, gate, program)
    finally:
        close = getattr(opened, "close", None)
        if callable(close):
            close()
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        click.echo(report.text(), nl=False)
    if not report.ok:
        raise SystemExit(1)
