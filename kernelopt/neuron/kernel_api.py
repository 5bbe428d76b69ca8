"""Which NKI namespace the kernel shipped to a host is written in, decided before
anything is shipped.

Neuron 2.22-2.26 have only NKI beta 1 (``neuronxcc.nki``); 2.27 has both it and the
``nki`` namespace; from 2.28 ``neuronxcc.nki`` is gone, and from 2.30 a kernel that
uses ``neuronxcc.nki.*`` is a compile error (NKI release notes 2.27.0; docs/trn2.md).
A kernel is shipped as written when the host has its namespace. A KernelIR kernel
whose committed ``kernel.py`` is exactly the rendering of its committed
``knobs.json`` is shipped as the other rendering of the same knobs when the host
needs that namespace (or ``device.neuron.kernel_api`` asks for it). Anything else
fails here, with a message naming the host's SDK, the namespace and the fix.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelopt.neuron.sdk import BETA1, NKI, SdkPlan

SETTINGS = ("auto", NKI, BETA1)
# The KernelIR renderer's name for each namespace.
RENDER_API = {NKI: "nki", BETA1: "beta1"}
SPELLED = {NKI: "the nki namespace (import nki)", BETA1: "neuronxcc.nki (NKI beta 1)"}


@dataclass(frozen=True)
class Shipped:
    """The kernel a host gets: its namespace, and its text when it is not the
    committed file (a rendering of the committed knobs)."""

    namespace: str | None
    text: str | None = None
    record: dict[str, Any] = field(default_factory=dict)


class KernelApiError(ValueError):
    """The kernel cannot be shipped to this host; the message says why and the fix."""


def namespace_of(source: str) -> str | None:
    """The NKI namespace a kernel imports ("nki" or "neuronxcc"), None when it imports
    neither (or both, or does not parse: the compiler then has the last word)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if name == "nki" or name.startswith("nki."):
                found.add(NKI)
            elif name.startswith("neuronxcc.nki"):
                found.add(BETA1)
    return found.pop() if len(found) == 1 else None


def _wanted(setting: str, plan: SdkPlan, own: str) -> str:
    """The namespace to ship: the setting's, beta 1 on a forced baremetal path, the
    kernel's own where the host has it, else the one the host has."""
    if setting in (NKI, BETA1):
        return setting
    if plan.path == "baremetal" and plan.path_chosen != "probed":
        return BETA1
    if own in plan.namespaces:
        return own
    return next(n for n in (NKI, BETA1) if n in plan.namespaces)


def choose(
    kernel: str,
    source: str,
    setting: str,
    plan: SdkPlan,
    render: Callable[[str], str | None],
    knobs: str | None = None,
) -> Shipped:
    """What to ship for ``kernel`` (its committed ``source``) to a host with ``plan``.

    ``render(namespace)`` is the other rendering of the committed knobs, or None when
    the committed kernel is not exactly their rendering. Raises KernelApiError.
    """
    if setting not in SETTINGS:
        raise KernelApiError(
            f"device.neuron.kernel_api: expected one of {', '.join(SETTINGS)}, got {setting!r}"
        )
    own = namespace_of(source)
    record: dict[str, Any] = {
        "setting": setting,
        "committed": own,
        "host_namespaces": list(plan.namespaces),
    }
    if own is None or not plan.namespaces:
        return Shipped(own, None, {**record, "api": own, "shipped": "as written"})
    want = _wanted(setting, plan, own)
    sdk = f"Neuron SDK {plan.generation or '(release not recognised)'}"
    if want not in plan.namespaces:
        raise KernelApiError(
            f"device.neuron.kernel_api is {setting}: {SPELLED[want]}, but this host's {sdk} "
            f"has only {', '.join(SPELLED[n] for n in plan.namespaces)}; set kernel_api: auto "
            "or measure on a host whose SDK has that namespace"
        )
    if want == own:
        return Shipped(own, None, {**record, "api": own, "shipped": "as written"})
    rendered = render(want)
    if rendered is not None:
        return Shipped(
            want,
            rendered,
            {**record, "api": want, "shipped": "rendered", "rendered_from": knobs},
        )
    if own in plan.namespaces:
        # The host has the kernel's namespace: the program asked for the other one.
        asked = (
            f"device.neuron.kernel_api is {setting}"
            if setting != "auto"
            else "device.neuron.sdk_path baremetal runs NKI beta 1 kernels only"
        )
        raise KernelApiError(
            f"{kernel} imports {SPELLED[own]}, but {asked} and {kernel} is not the rendering "
            f"of {knobs or 'a knobs.json (target.knobs)'}, so kernelopt cannot ship it in "
            f"{SPELLED[want]}. Fix: set kernel_api: auto (and sdk_path: auto), or make the "
            "kernel the rendering of its knobs"
        )
    raise KernelApiError(_missing(kernel, own, want, sdk, knobs))


def _missing(kernel: str, own: str, want: str, sdk: str, knobs: str | None) -> str:
    """Why a kernel in ``own`` cannot go to a host that needs ``want``, and the fix."""
    keep = (
        f"keep {kernel} exactly the rendering of {knobs} (kernelopt then ships the "
        f"{RENDER_API[want]} rendering of the same knobs)"
        if knobs
        else "give the target a knobs.json whose rendering the kernel is (target.knobs)"
    )
    if own == NKI:
        return (
            f"{kernel} imports the nki namespace, which this host's {sdk} does not have "
            "(nki.* arrived in Neuron 2.27; before it there is only neuronxcc.nki, NKI beta 1). "
            f"Fix: {keep}; or write the kernel against neuronxcc.nki (`kernelopt ir render "
            "--api beta1` prints a KernelIR kernel that way); or upgrade the host to Neuron "
            "2.27 or later (pip install nki)"
        )
    return (
        f"{kernel} imports neuronxcc.nki (NKI beta 1), which this host's {sdk} does not have: "
        "Neuron 2.27 was the last release with it, and neuronxcc.nki.* inside a kernel is a "
        "compile error from Neuron 2.30 (NKI release notes 2.27.0). Fix: port the kernel to "
        "the nki namespace (import nki, nki.language as nl, nki.isa as nisa; the NKI beta 2 "
        f"migration guide); or {keep}; or measure on a host with Neuron 2.27 or before"
    )
