"""Which compiler processes on a host are compiles kernelopt is running right now.

A neuronx-cc (or walrus) process is a leftover when nothing waits for it any more.
kernelopt's own compile pool runs the compiler under a driver step on the host
(``python -m kernelopt.neuron.driver compile`` -> ``python -m kernelopt.neuron.steps
compile`` -> neuronx-cc), possibly while the same run leases another device of that
host; such a compiler is work in progress, not a leftover. It is recognised by its
parent chain reaching a live kernelopt driver or step process. An orphan from a
killed run has lost that chain (it is re-parented to init), so it still counts.
Reading the chain needs ``ps -o ppid=,args=`` on the host; where that fails the
compiler counts as a leftover (the gate fails closed).
"""

from __future__ import annotations

from collections.abc import Iterable

from kernelopt.hosts.base import Host

# What a kernelopt process on a Neuron host runs: the driver, or one of its steps.
MARKS = ("kernelopt.neuron.driver", "kernelopt.neuron.steps")
# How far up a parent chain is followed (a driver is a few levels above its compiler).
DEPTH = 32


def ancestry_script(pids: Iterable[int]) -> str:
    """A POSIX shell line printing "PID ANCESTOR-ARGS" for every ancestor of each pid."""
    listed = " ".join(str(int(p)) for p in pids)
    return (
        f"for p in {listed}; do q=$p; n=0; while [ $n -lt {DEPTH} ]; do "
        'q=$(ps -o ppid= -p "$q" 2>/dev/null | tr -d " "); '
        '[ -n "$q" ] && [ "$q" -gt 1 ] || break; '
        'printf "%s %s\\n" "$p" "$(ps -ww -o args= -p "$q" 2>/dev/null)"; '
        "n=$((n+1)); done; done"
    )


def in_flight(host: Host, pids: Iterable[int], timeout: float) -> frozenset[int]:
    """The pids among ``pids`` whose parent chain reaches a live kernelopt driver or step."""
    wanted = sorted({int(p) for p in pids})
    if not wanted:
        return frozenset()
    result = host.run(ancestry_script(wanted), timeout=timeout)
    if result.timed_out:
        return frozenset()
    ours = set()
    for line in result.stdout.splitlines():
        pid, _, args = line.strip().partition(" ")
        # Substring match on the raw args: an ancestor's command line may hold any
        # quoting (an unmatched quote must not stop the gate), and a mark never spans words.
        if pid.isdigit() and any(m in args for m in MARKS):
            ours.add(int(pid))
    return frozenset(ours & set(wanted))
