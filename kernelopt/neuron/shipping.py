"""The tree a host gets for one candidate: the committed tree, with the kernel in the
namespace the host's SDK takes (kernel_api.py), and the route it is measured by.

The CPU check reads the kernel that is actually shipped, so a beta-1 rendering is
checked as beta 1; the record says which namespace was shipped and, for a
rendering, from which knobs.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelopt.neuron import remote
from kernelopt.neuron.kernel_api import RENDER_API, KernelApiError, Shipped, choose
from kernelopt.neuron.sdk import SdkPlan


@dataclass(frozen=True)
class ForHost:
    """One candidate as a host gets it."""

    data: bytes  # the packed tree
    kernel: Path  # the kernel file the CPU check reads (the shipped text)
    path: str | None  # the measuring path (sdk.PATHS) for this kernel's namespace
    compile_api: str | None
    digest: str  # of the shipped kernel and the workload: what a build depends on
    record: dict[str, Any] = field(default_factory=dict)  # extra["kernel_api"]


def for_host(
    tree: Path,
    kernel: str,
    workload: str,
    knobs: str | None,
    setting: str,
    plan: SdkPlan,
    packed: bytes,
    scratch: Path,
) -> ForHost:
    """The candidate in ``tree`` as ``plan``'s host takes it. ``packed`` is the committed
    tree already packed; ``scratch`` a folder for a rendered kernel. Raises
    KernelApiError when no namespace the host has can carry the kernel."""
    source = (tree / kernel).read_text()
    shipped = choose(
        kernel,
        source,
        setting,
        plan,
        lambda namespace: _rendering(tree, kernel, workload, knobs, source, namespace),
        knobs,
    )
    path, api = plan.route(shipped.namespace or "")
    record = {**shipped.record, "path": path}
    text = shipped.text if shipped.text is not None else source
    digest = hashlib.sha256(text.encode() + (tree / workload).read_bytes()).hexdigest()
    if shipped.text is None:
        return ForHost(packed, tree / kernel, path, api, digest, record)
    checked = scratch / Path(kernel).name
    checked.parent.mkdir(parents=True, exist_ok=True)
    checked.write_text(shipped.text)
    data = remote.pack_tree(tree, replace={kernel: shipped.text})
    return ForHost(data, checked, path, api, digest, record)


def _rendering(
    tree: Path, kernel: str, workload: str, knobs: str | None, source: str, namespace: str
) -> str | None:
    """The ``namespace`` rendering of the committed knobs, when the committed kernel is
    exactly one of their renderings; None otherwise (hand-edited, or no knobs)."""
    if not knobs or not (tree / knobs).is_file():
        return None
    from kernelopt.ir import read_knobs, render_ir

    try:
        ir = read_knobs(tree / knobs, tree / workload)
        renderings = {n: render_ir(ir, api=api) for n, api in RENDER_API.items()}
    except Exception:  # noqa: BLE001 - knobs and workload are user files: no rendering
        return None
    return renderings[namespace] if source in renderings.values() else None


def scratch_dir() -> Path:
    """A fresh folder for rendered kernels; the caller removes it."""
    return Path(tempfile.mkdtemp(prefix="kernelopt-shipped-"))


__all__ = ["ForHost", "KernelApiError", "Shipped", "for_host", "scratch_dir"]
