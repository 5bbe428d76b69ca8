"""Where a process of the fake runtime runs: which logical core, at which LNC, on
which chip. Shared by the fake nrtpy and the fake profiler's ``capture``.

From the public record (each point is the behaviour of the real runtime):

* ``NEURON_RT_VISIBLE_CORES`` takes a core id, a range ``"1-3"`` or a list, in
  the numbering of the LNC the runtime runs with; it is optional: without it
  the runtime initializes every core of the host (aws-neuron-sdk
  neuron-runtime configuration guide, "By default, Neuron Runtime initializes
  all the cores present in the system"; nrtpy ``configuration.rst``).
  A model loaded without a binding then lands on the first visible core:
  core 0 (``load_from_neff(..., core_id=0)``, nrtpy model reference), which
  is how a dropped binding silently runs on chip 0.
* ``NEURON_LOGICAL_NC_CONFIG`` sets the runtime's LNC (logical-neuroncore-config.rst);
  without it the host's configured LNC applies (Trn2 default 2).
* Logical core c at LNC l covers physical cores c*l .. c*l+l-1, eight physical
  cores per Trainium2 device (logical-neuroncore-config.rst; neuron-ls.rst's
  example: device 15 -> logical ids 60-63 at LNC=2).
* ``core_id`` of ``load_from_neff`` indexes the visible cores (unverified: the
  reference only says "Target NeuronCore for the model").
* A core id beyond the host's cores fails to load; the exact error text and
  status are unverified.
* A transient failure to bind (the ``bind_failures`` setting): the runtime fails
  with ``NRT_FAILURE`` while, for instance, a residual compiler runs on the host
  (awslabs/nki-autotune's notes name that cause); the fake fails the next
  ``count`` binds, of any NEFF or of the NEFF whose sha256 is ``neff_sha256``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class PlacementError(ValueError):
    """The binding names no core of this host (or the bind failed)."""


class BindFailure(PlacementError):
    """A transient failure to bind the core, injected by the ``bind_failures`` setting."""


BIND_FAILURES_NAME = "bind-failures.used"


@dataclass(frozen=True)
class Placement:
    core: int  # logical id at `lnc`
    lnc: int
    chip: int
    physical: tuple[int, ...]
    bound: bool  # NEURON_RT_VISIBLE_CORES was set

    def as_dict(self) -> dict[str, Any]:
        return {
            "core": self.core,
            "lnc": self.lnc,
            "chip": self.chip,
            "physical_cores": list(self.physical),
            "bound": self.bound,
        }


def _cores(text: str) -> list[int]:
    found: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            low, high = part.split("-", 1)
            found.extend(range(int(low), int(high) + 1))
        elif part:
            found.append(int(part))
    return found


def _injected_failure(settings: Mapping[str, Any], neff: str | None) -> str | None:
    """The error of an injected bind failure for this bind, or None. The count of failures
    used so far lives in the fake's home, so it holds across processes."""
    wanted = settings.get("bind_failures")
    if not wanted or not neff:
        return None
    digest = wanted.get("neff_sha256")
    if digest and (
        not os.path.isfile(neff) or hashlib.sha256(Path(neff).read_bytes()).hexdigest() != digest
    ):
        return None
    from kernelopt.testing.fake_trn2 import config

    with open(config.home() / BIND_FAILURES_NAME, "a+") as used:
        fcntl.flock(used, fcntl.LOCK_EX)
        used.seek(0)
        count = len(used.read().splitlines())
        if count >= int(wanted.get("count", 1)):
            return None
        used.write(json.dumps({"neff": neff}) + "\n")
    return "NRT_FAILURE(1): failed to bind the NeuronCore (the fake's bind_failures setting)"


def place(
    settings: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    core_id: int = 0,
    neff: str | None = None,
) -> Placement:
    """The core a runtime process started with ``env`` runs a model on (the NEFF
    ``neff``, for the ``bind_failures`` setting)."""
    env = os.environ if env is None else env
    failure = _injected_failure(settings, neff)
    if failure:
        raise BindFailure(failure)
    lnc = int(env.get("NEURON_LOGICAL_NC_CONFIG") or settings["lnc"])
    physical_per_chip = int(settings["cores_per_device"])
    chips = settings["devices"]
    count = len(chips) if isinstance(chips, list) else int(chips)
    total = count * physical_per_chip // lnc
    text = env.get("NEURON_RT_VISIBLE_CORES", "")
    try:
        visible = _cores(text) if text else list(range(total))
    except ValueError:
        raise PlacementError(f"NEURON_RT_VISIBLE_CORES={text!r} is not a core list") from None
    if not 0 <= core_id < len(visible):
        raise PlacementError(f"core_id {core_id} is not one of the {len(visible)} visible cores")
    core = visible[core_id]
    if not 0 <= core < total:
        raise PlacementError(
            f"NeuronCore {core} does not exist at LNC={lnc} on this host ({total} cores)"
        )
    first = core * lnc
    return Placement(
        core, lnc, first // physical_per_chip, tuple(range(first, first + lnc)), bool(text)
    )
