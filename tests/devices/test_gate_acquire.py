"""The availability gate: waiting, giving up, locking, racing and stale locks."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_tools import OWN_PROCESSES, FakeTools, neuron_device

from kernelopt.devices import (
    Gate,
    Lease,
    NoIdleDevice,
    WaitNotice,
    acquire,
    acquire_many,
    make_gate,
)
from kernelopt.devices.locks import LockOwner, lock_holder, try_lock
from kernelopt.hosts import LocalHost

HOST = LocalHost("box")


class FakeTime:
    """A clock that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.on_sleep: list[Callable[[int], None]] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        for hook in self.on_sleep:
            hook(len(self.sleeps))


def gate(fakes: FakeTools) -> Gate:
    return make_gate(
        "neuron",
        search_path=[str(fakes.bin_dir)],
        use_monitor=False,
        process_table=OWN_PROCESSES,
    )


def test_busy_then_idle_waits_and_proceeds(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0, busy_pid=999)])
    time = FakeTime()

    def free_after_second_wait(sleeps: int) -> None:
        if sleeps == 2:
            fakes.set("neuron", devices=[neuron_device(0)])

    time.on_sleep.append(free_after_second_wait)
    notices: list[WaitNotice] = []
    lease = acquire(
        gate(fakes),
        [HOST],
        poll_s=600,
        max_wait_s=3600,
        lock_dir=lock_dir,
        clock=time.clock,
        sleep=time.sleep,
        on_wait=notices.append,
    )
    assert isinstance(lease, Lease)
    assert time.sleeps == [600, 600]
    assert [n.waited_s for n in notices] == [0, 600]
    assert "busy" in notices[0].reason and "999" in notices[0].reason
    assert lease.binding == {"NEURON_RT_VISIBLE_CORES": "0", "NEURON_LOGICAL_NC_CONFIG": "1"}
    lease.release()


def test_busy_throughout_gives_no_idle_device_with_reason(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0, busy_pid=999)])
    time = FakeTime()
    result = acquire(
        gate(fakes),
        [HOST],
        poll_s=600,
        max_wait_s=3600,
        lock_dir=lock_dir,
        clock=time.clock,
        sleep=time.sleep,
    )
    assert isinstance(result, NoIdleDevice)
    assert result.waited_s == 3600 and sum(time.sleeps) == 3600 and len(time.sleeps) == 6
    assert "no idle device after waiting 3600s" in result.reason
    assert "box:0 busy" in result.reason and "pid 999" in result.reason


def test_last_wait_is_cut_to_the_limit(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0, busy_pid=999)])
    time = FakeTime()
    acquire(
        gate(fakes),
        [HOST],
        poll_s=40,
        max_wait_s=100,
        lock_dir=lock_dir,
        clock=time.clock,
        sleep=time.sleep,
    )
    assert time.sleeps == [40, 40, 20]


def test_real_short_durations(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0, busy_pid=999)])
    result = acquire(gate(fakes), [HOST], poll_s=0.05, max_wait_s=0.2, lock_dir=lock_dir)
    assert isinstance(result, NoIdleDevice) and 0.2 <= result.waited_s < 10


def test_most_idle_device_across_hosts_is_chosen(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set(
        "nvidia",
        gpus=[
            {"index": 0, "uuid": "GPU-a", "util": 4, "mem": 10, "total": 1},
            {"index": 1, "uuid": "GPU-b", "util": 0, "mem": 500, "total": 1},
            {"index": 2, "uuid": "GPU-c", "util": 0, "mem": 20, "total": 1},
        ],
        apps=[],
    )
    nvidia = make_gate("nvidia", search_path=[str(fakes.bin_dir)])
    lease = acquire(nvidia, [HOST], lock_dir=lock_dir)
    assert isinstance(lease, Lease) and lease.device == "nvidia:2"
    second = acquire(nvidia, [HOST], lock_dir=lock_dir)
    assert isinstance(second, Lease) and second.device == "nvidia:1"
    lease.release()
    second.release()


def test_locked_device_is_skipped_and_reported(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0)])
    held = acquire(gate(fakes), [HOST], lock_dir=lock_dir)
    assert isinstance(held, Lease)
    time = FakeTime()
    result = acquire(
        gate(fakes),
        [HOST],
        poll_s=1,
        max_wait_s=2,
        lock_dir=lock_dir,
        clock=time.clock,
        sleep=time.sleep,
    )
    assert isinstance(result, NoIdleDevice) and "locked by another kernelopt run" in result.reason
    held.release()
    again = acquire(gate(fakes), [HOST], lock_dir=lock_dir)
    assert isinstance(again, Lease)
    again.release()


def test_acquire_many_takes_every_idle_device(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0), neuron_device(1, busy_pid=5), neuron_device(2)])
    leases = acquire_many(gate(fakes), [HOST], lock_dir=lock_dir)
    assert isinstance(leases, list) and [x.device for x in leases] == ["neuron:0", "neuron:2"]
    for lease in leases:
        lease.release()


def test_gate_errors_on_every_host_stop_at_once(fakes: FakeTools, lock_dir: str) -> None:
    fakes.set("neuron", devices=[neuron_device(0)], output="malformed")
    time = FakeTime()
    result = acquire(gate(fakes), [HOST], lock_dir=lock_dir, clock=time.clock, sleep=time.sleep)
    assert isinstance(result, NoIdleDevice) and "did not print JSON" in result.reason
    assert time.sleeps == []


def test_threads_racing_for_one_device_never_hold_it_together(lock_dir: str) -> None:
    holders: list[int] = []
    overlaps: list[int] = []
    guard = threading.Lock()
    start = threading.Barrier(8)

    def contender(number: int) -> None:
        start.wait()
        for _ in range(10):
            lock = try_lock(HOST, "neuron-0", lock_dir=lock_dir)
            if lock is None:
                continue
            with guard:
                holders.append(number)
                if len(holders) > 1:
                    overlaps.append(number)
            with guard:
                holders.remove(number)
            lock.release()

    threads = [threading.Thread(target=contender, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []


def test_processes_racing_for_one_device_exactly_one_wins(lock_dir: str, tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from kernelopt.devices.locks import try_lock\n"
        "from kernelopt.hosts import LocalHost\n"
        "lock = try_lock(LocalHost(), 'rocm-0', lock_dir=sys.argv[1])\n"
        "print('won' if lock else 'lost', flush=True)\n"
        "time.sleep(0.5)\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, lock_dir], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    outcomes = sorted(p.communicate(timeout=30)[0].strip() for p in procs)
    assert outcomes == ["lost", "lost", "lost", "won"]


def test_stale_lock_from_dead_pid_is_recovered(lock_dir: str) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    stale = LockOwner(LockOwner.current().machine, pid, 12345, "deadbeef")
    path = Path(lock_dir) / "neuron-0.lock"
    path.mkdir(parents=True)
    (path / "owner").write_text(stale.text() + "\n")
    lock = try_lock(HOST, "neuron-0", lock_dir=lock_dir)
    assert lock is not None
    holder = lock_holder(HOST, "neuron-0", lock_dir=lock_dir)
    assert holder is not None and holder.pid != pid and holder.nonce == lock.owner.nonce
    lock.release()
    assert not path.exists()


def test_lock_of_live_process_or_other_machine_is_respected(lock_dir: str) -> None:
    path = Path(lock_dir) / "neuron-0.lock"
    path.mkdir(parents=True)
    live = LockOwner.current()
    (path / "owner").write_text(LockOwner(live.machine, 1, 0, "init").text())
    assert try_lock(HOST, "neuron-0", lock_dir=lock_dir) is None
    (path / "owner").write_text(LockOwner("elsewhere", 999999, 1, "x").text())
    assert try_lock(HOST, "neuron-0", lock_dir=lock_dir) is None


def test_release_leaves_a_lock_that_is_no_longer_ours(lock_dir: str) -> None:
    lock = try_lock(HOST, "nvidia-1", lock_dir=lock_dir)
    assert lock is not None
    (Path(lock.path) / "owner").write_text(LockOwner("elsewhere", 1, 1, "other").text())
    lock.release()
    assert Path(lock.path).exists()


@pytest.mark.parametrize("name", ["", "../x", "a/b", ".hidden"])
def test_bad_lock_names_are_refused(name: str, lock_dir: str) -> None:
    with pytest.raises(ValueError, match="invalid lock name"):
        try_lock(HOST, name, lock_dir=lock_dir)
