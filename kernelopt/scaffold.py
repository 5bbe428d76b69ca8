"""`kernelopt init`: a program template written from the schema, plus the folders."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kernelopt.ledger import HEADER

if TYPE_CHECKING:
    from kernelopt.progress import ScreenTicker
    from kernelopt.workload import Workload

COMMAND_TEMPLATE = """---
kernelopt: 1
name: {name}
target:
  kind: command
  # Run in the root of each candidate's tree; must finish within `timeout`.
  command: python3 ir/{name}/bench.py
  # csv | json | stdout ("key: value" lines)
  results: {{format: stdout}}
  # Must hold on every row of the results.
  correct: "err == 0"
  # Columns naming a config class, when the benchmark reports several configs.
  # config_columns: [n]
  # A knob file the runner may rewrite, and the values each knob may take.
  knobs: {{file: ir/{name}/knobs.json, space: {{BLOCK: [16, 64, 256, 1024, 4096]}}}}
  # Paths a candidate may not change (the program and performance.md always are).
  # By default the command's script is fixed too; this bench.py holds the kernel,
  # so it stays open here: list the harness files once you split them out.
  fixed: []
metric: {{name: time_us, better: lower}}
device: {{kind: none}}
decide: {{noise: 2%, confirm: 2, max_consecutive_regressions: 5, recent_window: 5, repair_attempts: 3}}
stop: {{max_candidates: 20, max_hours: 8}}
timeout: 10m
---
"""

NKI_TEMPLATE = """---
kernelopt: 1
name: {name}
target:
  kind: nki
  workload: {workload}
  kernel: {kernel}
  knobs: {knobs}
{metric}device: {{kind: auto}}
decide: {{noise: 1%, max_consecutive_regressions: {patience}, recent_window: 5, repair_attempts: 3}}
stop: {{{target}max_candidates: 500, max_hours: 8}}
timeout: 10m
---
"""
# A graph of matmuls (and transposes) bound by TensorE is scored by MFU; anything else by
# the share of its roofline it reaches (MFU means nothing to a norm, little to a matmul's
# epilogue, and to a matrix-vector product, bound by HBM, at most 1/128).
MFU_METRIC = "metric: {name: mfu, better: higher}\n"
ROOFLINE_METRIC = (
    "# The time the math needs at the chip's peak rates over the kernel's time (100 = roofline).\n"
    "metric: {name: roofline_percent, better: higher}\n"
)

AGENT_BODY = """
# Tuning {name}

You are tuning one kernel, autonomously, one hypothesis at a time. kernelopt
keeps the record: every attempt is a commit, kept results go to
performance.md, and regressions are reverted for you.

## How to work

1. Run `kernelopt status --json` in the run's worktree. Read `best_metric`,
   `consecutive_regressions`, `recent_regressions` and `best_profile`.
2. Pick exactly one bottleneck from what you read and write one sentence:
   what you will change and why it should be faster.
3. Edit only the files this program tunes ({files}). Never edit the benchmark,
   the workload's math or its shapes, and never reduce the work.
4. Run `kernelopt try -m "<your sentence>" --json`. It commits, measures,
   keeps or reverts. Read `verdict`, `gain` and `consecutive_regressions`.
5. Exit codes of `kernelopt try`: 0 keep, 10 tie, 11 regression, 12 incorrect
   (fix the numerics while keeping the idea, then try again), 13 failed (read
   `error`), 14 diverged (some config classes better, others worse: specialise
   by config), 15 interrupted, 16 refused (you changed a fixed file: the
   program, performance.md or the benchmark; `error` names it), 20 the run has
   stopped.
6. Repeat from step 1. Do not stop and do not ask whether to continue: stop
   only when `kernelopt try` exits 20.
"""


COMMAND_BENCH = '''"""{name}: the benchmark kernelopt runs on every candidate. Put your kernel here.

It reads its knobs from knobs.json beside it, times the kernel (best of
several runs), checks the answer, and prints ``time_us: <t>`` and ``err: <e>``
lines: the program reads them as results (format: stdout).
"""

import json
import time
from pathlib import Path

KNOBS = json.loads((Path(__file__).parent / "knobs.json").read_text())
N = 1 << 18


def kernel(values, block):
    """Sum ``values`` in chunks of ``block``: the knob trades loop overhead for chunk size."""
    total = 0
    for start in range(0, len(values), block):
        total += sum(values[start : start + block])
    return total


values = list(range(N))
expected = N * (N - 1) // 2
best = float("inf")
for _ in range(7):
    started = time.perf_counter()
    got = kernel(values, KNOBS["BLOCK"])
    best = min(best, time.perf_counter() - started)
print(f"time_us: {{best * 1e6:.1f}}")
print(f"err: {{abs(got - expected)}}")
'''

NKI_WORKLOAD = '''"""{name}: out = lhsT.T @ rhs. Change the math, shapes and dtypes here."""

import numpy as np

from kernelopt.ir import NKIMatmul


def f_nkigym(lhsT, rhs):
    out = NKIMatmul()(stationary=lhsT, moving=rhs)
    return out


def f_numpy(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhsT.T @ rhs


K, M, N = 1024, 1024, 1024
INPUT_SPECS = {{"lhsT": ((K, M), "bfloat16"), "rhs": ((K, N), "bfloat16")}}
'''


def _nki_files(
    root: Path,
    name: str,
    workload: Path | None,
    progress: ScreenTicker | None,
) -> dict[Path, str]:
    """A starting workload (unless given), and the knobs and kernel to start tuning from."""
    from kernelopt.ir.start import init_paths, initial_state
    from kernelopt.workload import load_workload

    files: dict[Path, str] = {}
    if workload is None:
        workload = root / "ir" / name / "workload.py"
        files[workload] = NKI_WORKLOAD.format(name=name)
        if not workload.exists():
            workload.parent.mkdir(parents=True, exist_ok=True)
            workload.write_text(files[workload])
    ir = initial_state(load_workload(workload), progress=progress).ir
    knobs, kernel = init_paths(workload)
    from kernelopt.ir.knobs_io import knobs_text
    from kernelopt.ir.render import render_ir

    files[knobs] = knobs_text(ir)
    files[kernel] = render_ir(ir)
    return files


def _tensor_bound(workload: Workload) -> bool:
    """Whether the math's roofline is TensorE's. A matrix-vector product (one stationary
    column) is bound by HBM: its MFU cannot pass 1/128 however fast the kernel, so it is
    scored by the share of its roofline, as element-wise math is."""
    from kernelopt.ir.mac import roofline_work
    from kernelopt.sim.roofline import PeakRates, roofline
    from kernelopt.sim.trn2 import DEFAULT_PARAMS

    work = roofline_work(workload.f_nkigym, workload.input_specs)
    return roofline(work, PeakRates.of(DEFAULT_PARAMS)).bound == "tensor"


def _nki_program(root: Path, name: str, workload: Path | None) -> str:
    """The program front matter for an nki target: paths, and the metric its math suits."""
    from kernelopt.ir.start import init_paths
    from kernelopt.ir.trace import trace
    from kernelopt.workload import load_workload

    path = workload or root / "ir" / name / "workload.py"
    knobs, kernel = init_paths(path)
    loaded = load_workload(path)
    kinds = {op.op.kind for op in trace(loaded.f_nkigym, loaded.input_specs).ops}
    matmuls = kinds <= {"matmul", "transpose"} and _tensor_bound(loaded)
    return NKI_TEMPLATE.format(
        name=name,
        workload=path.relative_to(root).as_posix(),
        kernel=kernel.relative_to(root).as_posix(),
        knobs=knobs.relative_to(root).as_posix(),
        metric=MFU_METRIC if matmuls else ROOFLINE_METRIC,
        patience=5 if matmuls else 16,
        target="target: 89.0, " if matmuls else "",
    )


def scaffold(
    root: Path,
    name: str,
    kind: str,
    workload: Path | None = None,
    progress: ScreenTicker | None = None,
) -> list[tuple[Path, bool]]:
    """Create what is missing; return (path, created) for each file considered.

    ``workload`` (nki only): an existing workload.py in the repository to tune, in
    place of a template one under ir/<name>/. ``progress`` hears how far the screen that
    picks an nki target's first knobs is (``kernelopt.ir.start.initial_state``).
    """
    out: list[tuple[Path, bool]] = []
    root = root.resolve()
    if workload is not None:
        workload = workload.resolve()
        if not workload.is_relative_to(root):
            raise ValueError(f"{workload}: the workload must be inside the repository {root}")
    template = None if kind == "nki" else COMMAND_TEMPLATE.format(name=name)
    created_workload = workload is None and not (root / "ir" / name / "workload.py").exists()
    wanted: dict[Path, str] = {}
    if kind == "nki":
        wanted.update(_nki_files(root, name, workload, progress))
        template = _nki_program(root, name, workload)
        files = ", ".join(p.relative_to(root).as_posix() for p in wanted if p.name != "workload.py")
    else:
        (root / "ir" / name).mkdir(parents=True, exist_ok=True)
        wanted[root / "ir" / name / "bench.py"] = COMMAND_BENCH.format(name=name)
        wanted[root / "ir" / name / "knobs.json"] = '{"BLOCK": 16}\n'
        files = f"ir/{name}/ (the kernel and its knobs)"
    assert template is not None
    wanted = {
        root / "programs" / f"{name}.md": template + AGENT_BODY.format(name=name, files=files),
        root / "performance.md": HEADER,
        **wanted,
    }
    for path, text in wanted.items():
        if path.name == "workload.py" and created_workload:
            out.append((path, True))  # written first: the knobs and kernel derive from it
            continue
        if path.exists():
            out.append((path, False))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append((path, True))
    return out
