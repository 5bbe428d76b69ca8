"""One KernelIR kernel measured on each SDK layout of the fake Trn2 toolchain.

The same knob state, committed as its nki rendering, goes to every layout: 2.22 and
2.26 get its beta-1 rendering through neuronxcc.nki.baremetal, 2.27 and 2.30 the nki
text through the profiler's captures, 2.32 through nrtpy. Prints, per layout, the
path, what was shipped, the min device time, MFU (2 x MACs / (time x 78.64e12 x
lnc)), roofline percent, nki.benchmark's p0 where there is one, and the compiler
baseline's row. The same instruction stream should give the same device time on
every layout, within the fake device's noise.

    python benchmarks/sdk_layouts.py [SDK ...]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from kernelopt.devices.neuron import NeuronGate
from kernelopt.hosts import LocalHost
from kernelopt.ir import ir_for_workload, knobs_text, render_ir
from kernelopt.neuron.target import NeuronTarget
from kernelopt.program import NeuronConfig
from kernelopt.testing.fake_trn2 import SDK_STYLES, FakeTrn2

KERNELS = Path(__file__).resolve().parents[1] / "tests" / "neuron" / "kernels"
SMALL = "ir/small"


def knob_tree(root: Path) -> Path:
    """A tree whose kernel.py is the nki rendering of its knobs.json."""
    folder = root / "tree" / SMALL
    folder.mkdir(parents=True)
    shutil.copy(KERNELS / "workload.py", folder / "workload.py")
    ir = ir_for_workload(folder / "workload.py")
    (folder / "knobs.json").write_text(knobs_text(ir))
    (folder / "kernel.py").write_text(render_ir(ir))
    return root / "tree"


def target(root: Path, fake: FakeTrn2) -> NeuronTarget:
    split = fake.runtime_activate_path != fake.activate_path
    extra = {"runtime_activate": str(fake.runtime_activate_path)} if split else {}
    return NeuronTarget(
        workload=f"{SMALL}/workload.py",
        kernel=f"{SMALL}/kernel.py",
        knobs=f"{SMALL}/knobs.json",
        hosts=(LocalHost(),),
        gate=NeuronGate(
            search_path=(str(fake.bin_dir),),
            process_table=f"ps -o pid=,args= --ppid {os.getpid()} || true",
        ),
        results_dir=root / "results",
        settings=NeuronConfig(activate=str(fake.activate_path), iterations=20, **extra),
        python=sys.executable,
        poll_s=0.05,
        max_wait_s=0.0,
        lock_dir=str(root / "locks"),
    )


def main() -> None:
    layouts = sys.argv[1:] or list(SDK_STYLES)
    print("sdk   path       shipped              min_ms    mfu%   roofline%  bench_p0_us  baseline")
    for sdk in layouts:
        root = Path(tempfile.mkdtemp(prefix=f"kernelopt-sdk-{sdk}-"))
        fake = FakeTrn2(root / "fake").install(sdk=sdk)
        fake.configure(monitor_period_s=0.1)
        tree = knob_tree(root)
        measuring = target(root, fake)
        m, ref = measuring.measure(tree), measuring.reference(tree)
        if not m.ok:
            print(f"{sdk:5} {m.status}: {m.error}")
            continue
        api = m.extra["kernel_api"]
        bench = (m.extra.get("neuron_bench") or {}).get("percentiles_us", {}).get("0")
        base = (
            f"{ref.metrics['mfu']:.3f}% ({ref.extra['what'].split('(')[-1]}"
            if ref.ok
            else ref.status
        )
        print(
            f"{sdk:5} {m.extra['sdk_path']:10} {api['api'] + ' ' + api['shipped']:20} "
            f"{m.metrics['min_ms']:.5f}  {m.metrics['mfu']:6.3f}  {m.metrics['roofline_percent']:8.2f}"
            f"  {bench if bench is None else round(bench, 2)!s:>11}  {base}"
        )
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
