"""Gates and device locks work the same through an SSH host."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from sshd_server import LoopbackSSHD

from kernelopt.devices import Lease, NoIdleDevice, acquire, make_gate
from kernelopt.devices.cli import gate_command
from kernelopt.hosts import SSHHost


def test_neuron_survey_lease_and_lock_over_ssh(
    ssh_host: SSHHost, fakes: Any, tmp_path: Path
) -> None:
    fakes.set(
        "neuron",
        devices=[
            {"id": 0, "lnc": 1, "cores": [0, 1], "processes": [{"pid": 9, "command": "train"}]},
            {"id": 1, "lnc": 2, "cores": [2, 3]},
        ],
        utilization={"2": 1.0},
    )
    gate = make_gate("neuron", search_path=[str(fakes.bin_dir)])
    statuses = gate.survey(ssh_host)
    assert [(s.host, s.device, s.idle) for s in statuses] == [
        ("gym-1", "0", False),
        ("gym-1", "1", True),
    ]
    assert statuses[1].utilization == 1.0
    lock_dir = str(tmp_path / "locks with 'quote")
    lease = acquire(gate, [ssh_host], poll_s=0.01, max_wait_s=0, lock_dir=lock_dir)
    # The first logical core of device 1, in the LNC numbering neuron-ls used for it.
    assert isinstance(lease, Lease) and lease.binding == {
        "NEURON_RT_VISIBLE_CORES": "2",
        "NEURON_LOGICAL_NC_CONFIG": "2",
    }
    second = acquire(gate, [ssh_host], poll_s=0.01, max_wait_s=0, lock_dir=lock_dir)
    assert isinstance(second, NoIdleDevice) and "locked" in second.reason
    lease.release()
    assert list(Path(lock_dir).iterdir()) == []


def test_gate_command_surveys_ssh_aliases(sshd: LoopbackSSHD) -> None:
    result = CliRunner().invoke(
        gate_command,
        [
            "--kind",
            "none",
            "--host",
            "gym-1",
            "--host",
            "gym-2",
            "--ssh-config",
            str(sshd.ssh_config),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    assert [d["host"] for d in json.loads(result.output)] == ["gym-1", "gym-2"]


def test_gate_command_reports_an_unknown_host_key(sshd: LoopbackSSHD, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        f"Host fresh\n  HostName 127.0.0.1\n  Port {sshd.port}\n"
        f"  IdentityFile {sshd.root / 'user_key'}\n  UserKnownHostsFile {tmp_path / 'kh'}\n"
    )
    result = CliRunner().invoke(
        gate_command, ["--kind", "none", "--host", "fresh", "--ssh-config", str(config)]
    )
    assert result.exit_code == 1 and "unknown host [127.0.0.1]" in result.output
    trusted = CliRunner().invoke(
        gate_command,
        ["--kind", "none", "--host", "fresh", "--ssh-config", str(config), "--trust-new-hosts"],
    )
    assert trusted.exit_code == 0, trusted.output
    assert "fresh" in trusted.output and "idle" in trusted.output
