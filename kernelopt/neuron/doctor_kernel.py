"""`kernelopt doctor --program`: the program's kernel against the host's NKI namespaces.

The same decision a measurement makes before anything is shipped (kernel_api.py via
shipping.py): a kernel whose namespace the host has is shipped as written; a KernelIR
kernel that is exactly the rendering of its knobs is shipped as the other rendering
when the host needs it; anything else fails there, so doctor says so here, with the
same message and fix, rather than the run failing its first measurement.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kernelopt.neuron.doctor import Finding
from kernelopt.neuron.kernel_api import SPELLED, namespace_of
from kernelopt.neuron.sdk import SdkPlan
from kernelopt.neuron.shipping import KernelApiError, for_host, scratch_dir
from kernelopt.program import Program


def program_root(program: Program) -> Path:
    """Where the program's target paths are relative to: the first of its repository's
    top level, the working directory, its own folder and the one above that has the
    kernel (the repository's top level when none has it)."""
    from kernelopt.history import HistoryError, find_repo

    here = program.path.resolve().parent
    candidates = [Path.cwd(), here, here.parent]
    try:
        candidates.insert(0, find_repo(here))
    except HistoryError:
        pass
    kernel = program.target.kernel or ""
    return next((c for c in candidates if (c / kernel).is_file()), candidates[0])


def kernel_finding(program: Program, plan: SdkPlan, root: Path | None = None) -> Finding:
    """The ``kernel`` step: which namespace the program's kernel is in, what the host
    would be sent, and a failure with the fix when nothing can be sent."""
    t = program.target
    if not t.kernel or not t.workload:
        return Finding("kernel", "ok", "the program names no NKI kernel", None)
    root = root or program_root(program)
    kernel = root / t.kernel
    if not kernel.is_file() or not (root / t.workload).is_file():
        return Finding(
            "kernel",
            "missing",
            f"{t.kernel} or {t.workload} not found under {root}",
            None,
            "the program's target.kernel and target.workload",
            "run doctor from the program's repository, with the kernel committed",
        )
    own = namespace_of(kernel.read_text())
    has = f"{t.kernel}: {SPELLED.get(own or '', 'no NKI namespace recognised')}"
    hosts = ", ".join(SPELLED[n] for n in plan.namespaces) or "no NKI namespace"
    scratch = scratch_dir()
    try:
        shipped = for_host(
            root,
            t.kernel,
            t.workload,
            t.knobs.file if t.knobs else None,
            program.device.neuron.kernel_api,
            plan,
            b"",
            scratch,
        )
    except KernelApiError as exc:
        message, _, fix = str(exc).partition(" Fix: ")
        return Finding("kernel", "missing", f"{has}; the host has {hosts}", None, message, fix)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    record = shipped.record
    if shipped.path is None:
        return Finding(
            "kernel",
            "missing",
            f"{has}; the host has {hosts}",
            None,
            f"a measuring path for a {record.get('api')} kernel on this host",
            "see the run and time steps",
        )
    how = (
        f"shipped as the {record.get('api')} rendering of {record.get('rendered_from')}"
        if record.get("shipped") == "rendered"
        else "shipped as written"
    )
    return Finding("kernel", "ok", f"{has}; the host has {hosts}", f"{how}, path {shipped.path}")
