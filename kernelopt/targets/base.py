"""The Target contract: how a commit's tree becomes one Measurement.

Every target (a benchmark command, an NKI kernel on sim, an NKI kernel on
Trainium2) implements this, and one contract suite runs against each
(tests/targets/test_target_contract.py).

- ``measure(tree, env)`` measures the tree and always returns a Measurement:
  a crash, a timeout or wrong numbers are a Measurement with that status,
  never an exception. ``env`` is the device binding the executor leased.
- ``spec()`` is a JSON-able description from which ``from_spec`` rebuilds an
  equal target on a host (``python -m kernelopt.remote``); ``spec()["kind"]``
  names the class in ``KINDS``.
- ``reference(tree)`` is an optional hook: the compiler's own result for the
  same math, measured once per run beside the baseline. The default says
  there is none (None).
- ``device`` labels results (sim, neuron, none, ...); ``deterministic``
  targets are measured once per side, noisy ones against BEST interleaved.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol

from kernelopt.measurement import Measurement


class Target(Protocol):
    device: str
    deterministic: bool
    kind: ClassVar[str]

    def measure(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement: ...

    def spec(self) -> dict[str, Any]: ...

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Target: ...

    def reference(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement | None:
        """The compiler's baseline for the same math, or None when the target has none;
        ``env`` a device binding the caller holds, as for ``measure``."""
        return None


# spec()["kind"] -> the class that rebuilds it; imported on use, so that a host
# measuring a command target never imports the simulator or the Neuron code.
KINDS = {
    "command": "kernelopt.targets:LocalCommand",
    "nki-sim": "kernelopt.targets.nki:NkiSimTarget",
    "nki-neuron": "kernelopt.neuron.target:NeuronTarget",
}


def target_from_spec(spec: Mapping[str, Any]) -> Target:
    """The target a ``spec()`` describes."""
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ValueError(f"unknown target kind in spec: {kind!r} (known: {', '.join(KINDS)})")
    module, _, name = KINDS[str(kind)].partition(":")
    cls = getattr(importlib.import_module(module), name)
    return cls.from_spec(spec)
