"""Records of the calibration set: how a source timed its kernels, a case, a failure.

In a file of their own so ``cases.py`` holds only the public figures; ``cases.py``
loads this file by path (the folder is not a package) and re-exports its names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Timing:
    """How a source timed its kernels: a property of the measurement, not of the kernel.

    ``host`` is True when each timed execution includes the host's cost of
    launching it and waiting for it (a wall-clock timer around a synchronous
    execute call); the simulator estimates device time only. That cost is the
    same for every kernel a runner times, so the calibration benchmark
    estimates it per ``runner`` from that runner's other families (never from
    the family being scored). ``evidence`` says where the method was read.
    """

    runner: str
    host: bool
    evidence: str


DEVICE = Timing(
    "device",
    False,
    "device-side: the profiler's total_time of one traced execution (nki-autotune notes: "
    "profiler-native total_time and mfu_estimated_percent replaced host timing), or the "
    "NKI tutorial's profiles",
)
# awslabs/nki-autotune @616e222: autotune/core/run_nki.py times each kernel with
# neuronpy's SpikeExecutor.benchmark (warmup 10, iterations 100, min_ms). That
# benchmark was the host-side one: aws-neuron/nkipy pull request 22 (2026-02-12)
# "Replace host-side benchmarking with device-side latency measurement" removed
# the C++ benchmark and added the nc_exec_running device trace; its 'host' mode
# is documented as "Host wall-clock time. Includes all host-device overhead".
SPIKE_HOST = Timing(
    "nki-autotune spike benchmark",
    True,
    "host wall clock per synchronous execute: nki-autotune @616e222 run_nki.py uses "
    "neuronpy SpikeExecutor.benchmark, whose timing nkipy PR 22 (2026-02) replaced as "
    "host-side",
)


@dataclass(frozen=True)
class Case:
    """One public measurement and the kernel written here after it.

    ``measured_mfu`` is None for operators without matrix work: those are
    scored on ``measured_ms`` (latency). ``engines`` holds the profiler's
    active-time percentages where the source gives them. ``shapes``
    overrides the workload's input shapes, ``kernel_kwargs`` its
    ``KERNEL_KWARGS``; ``small``/``small_kwargs`` are what the numerics test
    runs at. ``timing`` is how the source timed it (``Timing``).
    ``search`` holds kernel-argument alternatives (each merged over
    ``kernel_kwargs``) that the source's tuner also measured without
    publishing which won: the source reports its fastest, so the benchmark
    times every alternative and scores the fastest in the model.
    """

    kernel: str
    workload: str
    measured_mfu: float | None
    evidence: str
    compiler_args: tuple[str, ...] = ()
    chip: str = "trn2"
    family: str = ""
    measured_ms: float | None = None
    engines: dict[str, float] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] | None = None
    kernel_kwargs: dict[str, Any] = field(default_factory=dict)
    small: dict[str, tuple[int, ...]] | None = None
    small_kwargs: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    timing: Timing = DEVICE
    search: tuple[dict[str, Any], ...] = ()

    @property
    def label(self) -> str:
        return self.name or self.kernel.removesuffix(".py")


@dataclass(frozen=True)
class Failure:
    """A public kernel that does not compile: the simulator must refuse it the same way."""

    kernel: str
    workload: str
    kernel_kwargs: dict[str, Any]
    message: str  # what the refusal must say (a regular expression)
    evidence: str
    name: str
    chip: str = "trn2"
