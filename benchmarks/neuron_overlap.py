"""How much compiling while measuring saves, on the fake Trn2 toolchain.

Each candidate's compile takes COMPILE_S (the fake compiler's delay); the
device then runs warmup + iterations and the profiler. Prints the batch's
wall time and the device's idle time between measurements for: one
candidate at a time (measure), a batch with one compile worker, and a batch
with two.

    python benchmarks/neuron_overlap.py [CANDIDATES] [COMPILE_S]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from kernelopt.devices.neuron import NeuronGate
from kernelopt.hosts import LocalHost
from kernelopt.measurement import Measurement
from kernelopt.neuron.target import NeuronTarget
from kernelopt.program import NeuronConfig
from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parents[1] / "tests" / "neuron" / "kernels"


def trees(root: Path, count: int) -> list[Path]:
    made = []
    for i in range(count):
        folder = root / f"tree{i}" / "ir" / "small"
        folder.mkdir(parents=True)
        shutil.copy(KERNELS / "workload.py", folder / "workload.py")
        shutil.copy(KERNELS / "kernel.py", folder / "kernel.py")
        made.append(root / f"tree{i}")
    return made


def device_idle_s(results: list[Measurement]) -> float:
    times = [m.extra["timeline"] for m in results]
    gaps = [
        b["measure_started"] - a["measure_finished"]
        for a, b in zip(times[:-1], times[1:], strict=True)
    ]
    return sum(max(0.0, g) for g in gaps)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    compile_s = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    root = Path(tempfile.mkdtemp(prefix="kernelopt-bench-"))
    fake = FakeTrn2(root / "fake").install()
    fake.configure(compile_delay_s=compile_s, monitor_period_s=0.1)
    candidates = trees(root, count)

    def target(workers: int) -> NeuronTarget:
        return NeuronTarget(
            workload="ir/small/workload.py",
            kernel="ir/small/kernel.py",
            hosts=(LocalHost(),),
            gate=NeuronGate(search_path=(str(fake.bin_dir),)),
            results_dir=root / "results",
            settings=NeuronConfig(activate=str(fake.activate_path), compile_workers=workers),
            python=sys.executable,
            lock_dir=str(root / "locks"),
        )

    print(f"{count} candidates, {compile_s:g} s per compile (fake neuronx-cc)")
    started = time.monotonic()
    one_by_one = [target(1).measure(t) for t in candidates]
    print(
        f"one at a time       : {time.monotonic() - started:6.2f} s wall, "
        f"device idle {device_idle_s(one_by_one):5.2f} s"
    )
    for workers in (1, 2):
        started = time.monotonic()
        batch = target(workers).measure_batch(candidates)
        assert all(m.ok for m in batch), [m.error for m in batch]
        print(
            f"batch, {workers} worker{'s' if workers > 1 else ' '}    : "
            f"{time.monotonic() - started:6.2f} s wall, device idle {device_idle_s(batch):5.2f} s"
        )
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
