"""Gates and device locks work the same through an SSH host."""

from __future__ import annotations

from pathlib import Path

from kernelopt.devices import Lease, NoIdleDevice, acquire, make_gate
from kernelopt.hosts import SSHHost


def test_neuron_survey_lease_and_lock_over_ssh(ssh_host: SSHHost, fakes, tmp_path: Path) -> None:
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
    assert isinstance(lease, Lease) and lease.binding == {"NEURON_RT_VISIBLE_CORES": "2,3"}
    second = acquire(gate, [ssh_host], poll_s=0.01, max_wait_s=0, lock_dir=lock_dir)
    assert isinstance(second, NoIdleDevice) and "locked" in second.reason
    lease.release()
    assert list(Path(lock_dir).iterdir()) == []
