"""`kernelopt gate`: which devices are idle right now."""

from __future__ import annotations

import json
import sys

import click

from kernelopt.devices.base import DeviceStatus, GateError
from kernelopt.devices.registry import GATES, survey_all
from kernelopt.hosts.base import HostError
from kernelopt.hosts.open import open_hosts


def _line(status: DeviceStatus) -> str:
    state = "idle" if status.idle else "BUSY"
    util = "-" if status.utilization is None else f"{status.utilization:.0f}%"
    memory = "-" if status.memory_used is None else f"{status.memory_used:g}"
    binding = " ".join(f"{k}={v}" for k, v in status.binding.items()) or "-"
    text = (
        f"{status.host:<16} {status.kind}:{status.device:<6} {state:<5} "
        f"util {util:>5}  mem {memory:>7}  {binding}"
    )
    if not status.idle:
        text += f"\n{'':<18}{status.reason}"
    elif status.processes:
        names = ", ".join(f"{p.command} (pid {p.pid})" for p in status.processes)
        text += f"\n{'':<18}processes on this host: {names}"
    return text


def _survey_program(program_path: str) -> list[DeviceStatus]:
    """The devices of a program's device section: its gate on its hosts, or through Ray."""
    from kernelopt.program import ProgramError, load_program
    from kernelopt.session import choose_device, open_program_hosts

    try:
        program = load_program(program_path)
    except ProgramError as error:
        click.echo(str(error), err=True)
        sys.exit(2)
    if program.device.executor == "ray":
        from kernelopt.ray_executor import ray_survey

        return ray_survey(program)
    kind, _ = choose_device(program)
    if kind == "sim":
        raise click.ClickException(
            f"{program_path} measures on sim (kernelopt's simulator): there is no device to survey"
        )
    opened = open_program_hosts(program)
    try:
        return survey_all(kind, opened)
    except (GateError, HostError, FileNotFoundError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    finally:
        for host in opened:
            host.close()


@click.command("gate")
@click.option(
    "--kind",
    type=click.Choice(["auto", *GATES]),
    default="auto",
    show_default=True,
    help="Device kind; auto uses the first of neuron-ls, nvidia-smi, rocm-smi found.",
)
@click.option(
    "--host",
    "hosts",
    multiple=True,
    metavar="ALIAS",
    help="ssh config alias to survey (repeatable); default: this machine.",
)
@click.option("--ssh-config", type=click.Path(dir_okay=False), help="ssh config file to use.")
@click.option("--trust-new-hosts", is_flag=True, help="Accept and save unknown host keys.")
@click.option(
    "--program",
    "program_path",
    type=click.Path(dir_okay=False),
    help="Survey the devices a program measures on (its device kind, hosts, ssh config, executor).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of devices.")
def gate_command(
    kind: str,
    hosts: tuple[str, ...],
    ssh_config: str | None,
    trust_new_hosts: bool,
    program_path: str | None,
    as_json: bool,
) -> None:
    """Show each device's state: idle or busy, processes, utilization.

    Exits 0 when at least one device is idle, 1 otherwise.

    \b
    Example:
      kernelopt gate --kind neuron --host gym-3 --host gym-4
      kernelopt gate --json
      kernelopt gate --program programs/matmul.md
    """
    if program_path:
        statuses = _survey_program(program_path)
    else:
        opened = open_hosts(hosts, ssh_config=ssh_config, trust_new_hosts=trust_new_hosts)
        try:
            statuses = survey_all(kind, opened)
        except (GateError, HostError, FileNotFoundError, ValueError) as error:
            raise click.ClickException(str(error)) from None
        finally:
            for host in opened:
                host.close()
    if as_json:
        click.echo(json.dumps([s.as_dict() for s in statuses], indent=2))
    else:
        for status in statuses:
            click.echo(_line(status))
        if not statuses:
            click.echo("no devices found")
    sys.exit(0 if any(s.idle for s in statuses) else 1)
