"""HostPool: a batch of jobs measured concurrently, one per leased device."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kernelopt.hosts.base import Host

J = TypeVar("J")
L = TypeVar("L")
R = TypeVar("R")


@dataclass(frozen=True)
class JobResult(Generic[R]):
    """One job's outcome. `value` is what measure_fn returned; when it raised on
    every attempt, `value` is None, `error` holds the text and `host_fault` is True.
    `busy_s` is how long the job occupied its device (last attempt).
    """

    index: int
    value: R | None
    error: str
    host_fault: bool
    host: str
    device: str
    attempts: int
    busy_s: float

    @property
    def ok(self) -> bool:
        return not self.host_fault


@dataclass(frozen=True)
class Slot(Generic[L]):
    """One device on one host, held through its lease for the pool's lifetime."""

    host: Host
    lease: L

    @property
    def device(self) -> str:
        return str(getattr(self.lease, "device", self.lease))


class HostPool(Generic[L]):
    """Runs jobs on slots, never two at once on one slot.

    Any exception from measure_fn is treated as a host fault (measure_fn reports
    measurement failures as data in its return value): the job is retried once
    on a different slot when there is one, and if that fails too its result is
    a failure marked host_fault. One thread per slot; jobs are handed out in
    order as slots free up, so a fast device takes more jobs than a slow one.
    A slot that faults `retire_after` times in a row (a dead host) takes no
    more jobs in this batch, so it cannot use up the retries of healthy work.
    A SystemExit or KeyboardInterrupt from measure_fn stops handing out jobs and
    is re-raised by map() once the running jobs have finished.
    """

    def __init__(
        self,
        slots: Sequence[Slot[L]] | Sequence[tuple[Host, L]],
        *,
        retries: int = 1,
        retire_after: int = 2,
    ) -> None:
        self.slots: list[Slot[L]] = [
            s if isinstance(s, Slot) else Slot(host=s[0], lease=s[1]) for s in slots
        ]
        if not self.slots:
            raise ValueError("HostPool needs at least one (host, device lease) slot")
        self.retries = retries
        self.retire_after = retire_after

    def map(self, jobs: Sequence[J], measure_fn: Callable[[J, Host, L], R]) -> list[JobResult[R]]:
        """Measure every job; results come back in job order."""
        state: _Batch[R] = _Batch(len(jobs), self.retries, self.slots)
        threads = [
            threading.Thread(
                target=self._worker,
                args=(number, slot, jobs, measure_fn, state),
                name=f"kernelopt-pool-{slot.host.name}-{slot.device}",
                daemon=True,
            )
            for number, slot in enumerate(self.slots)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if state.fatal is not None:
            raise state.fatal
        missing = [i for i, r in enumerate(state.results) if r is None]
        if missing:
            raise RuntimeError(f"internal error: jobs {missing} were never run")
        return [r for r in state.results if r is not None]

    def _worker(
        self,
        number: int,
        slot: Slot[L],
        jobs: Sequence[J],
        measure_fn: Callable[[J, Host, L], R],
        state: _Batch[R],
    ) -> None:
        faults_in_a_row = 0
        while True:
            index = state.take(number)
            if index is None:
                return
            attempts = state.attempts[index] + 1
            started = time.monotonic()
            try:
                value = measure_fn(jobs[index], slot.host, slot.lease)
            except BaseException as error:
                if not isinstance(error, Exception):
                    # SystemExit and the like: stop the batch, re-raised by map().
                    state.abandon(index, error, slot)
                    return
                # Any exception escaping measure_fn is a host fault by contract.
                faults_in_a_row += 1
                text = f"{type(error).__name__}: {error}"
                busy = time.monotonic() - started
                result: JobResult[R] = JobResult(
                    index, None, text, True, slot.host.name, slot.device, attempts, busy
                )
                retire = faults_in_a_row >= self.retire_after
                state.fail(index, number, result, retire=retire)
                if retire:
                    return
                continue
            faults_in_a_row = 0
            busy = time.monotonic() - started
            state.finish(
                index,
                JobResult(index, value, "", False, slot.host.name, slot.device, attempts, busy),
            )


class _Batch(Generic[R]):
    """Shared bookkeeping of one map() call, guarded by one condition."""

    def __init__(self, count: int, retries: int, slots: Sequence[Slot[object]]) -> None:
        self.pending: list[int] = list(range(count))
        self.results: list[JobResult[R] | None] = [None] * count
        self.attempts = [0] * count
        self.avoid: list[set[int]] = [set() for _ in range(count)]
        self.retries = retries
        self.slots = slots
        self.live: set[int] = set(range(len(slots)))
        self.running = 0
        self.stopped = False
        self.fatal: BaseException | None = None
        self.last_fault: list[JobResult[R] | None] = [None] * count
        self.cond = threading.Condition()

    def _may_run(self, index: int, slot: int) -> bool:
        # A retry avoids the slots it faulted on, unless no other live slot is left.
        return slot not in self.avoid[index] or self.live <= self.avoid[index]

    def take(self, slot: int) -> int | None:
        """Next job this slot may run; None when nothing is left for it."""
        with self.cond:
            while True:
                if self.stopped:
                    return None
                for position, index in enumerate(self.pending):
                    if self._may_run(index, slot):
                        del self.pending[position]
                        self.running += 1
                        return index
                if not self.pending and self.running == 0:
                    return None
                # Nothing this slot may take yet: a running job may still fail and
                # come back, or the remaining jobs wait for another slot.
                self.cond.wait()

    def finish(self, index: int, result: JobResult[R]) -> None:
        with self.cond:
            self.results[index] = result
            self.attempts[index] = result.attempts
            self.running -= 1
            self.cond.notify_all()

    def abandon(self, index: int, error: BaseException, slot: Slot[object]) -> None:
        """A slot died of a non-Exception (SystemExit...): stop handing out jobs;
        the jobs not started get that error as their result."""
        with self.cond:
            for job in [index, *self.pending]:
                self.results[job] = JobResult(
                    job,
                    None,
                    f"batch stopped: {type(error).__name__}: {error}",
                    True,
                    slot.host.name,
                    slot.device,
                    self.attempts[job],
                    0.0,
                )
            self.pending.clear()
            self.stopped = True
            self.fatal = error
            self.running -= 1
            self.cond.notify_all()

    def fail(self, index: int, slot: int, result: JobResult[R], *, retire: bool) -> None:
        """Record a host fault; requeue the job while it has retries left. A
        retiring slot (too many faults in a row) takes no more jobs; when no
        slot is left, the jobs still waiting fail with the last fault seen."""
        with self.cond:
            self.attempts[index] = result.attempts
            self.last_fault[index] = result
            self.running -= 1
            if retire:
                self.live.discard(slot)
            if result.attempts <= self.retries:
                self.avoid[index].add(slot)
                self.pending.append(index)
            else:
                self.results[index] = result
            if not self.live:
                for job in self.pending:
                    fault = self.last_fault[job] or result
                    self.results[job] = JobResult(
                        job,
                        None,
                        f"no healthy host left; last fault: {fault.error}",
                        True,
                        fault.host,
                        fault.device,
                        self.attempts[job],
                        0.0,
                    )
                self.pending.clear()
            self.cond.notify_all()
