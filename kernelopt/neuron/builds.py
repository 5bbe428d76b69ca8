"""Builds already made for a target: the CPU check's and the compile's record and
the NEFF, kept by everything that went into them.

A run measures the same tree more than once: BEST beside each challenger that
ties it, a candidate again when its first figure is inside the noise. Each of
those used to check the numbers on the CPU and compile again, identical work
that takes minutes on a Trn2 host. A build is a function of the kernel and
workload sources, the compiler (its version and API) and the options, so when
all of those match the NEFF is reused; the device still runs it afresh for
every measurement.

The index lives beside the run's results (``<results>/builds/<key>.json``) and
points at the NEFF and compile log the first measurement fetched, so `kernelopt
try` in a new process finds the builds of the run before it. A build whose
files are gone is built again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.files import write_atomically

# The files a reused build ships back into the host directory's out/, by artifact name.
KEPT = ("neff", "compile_log", "tensors")
# Times of the first build: a reuse has none of its own.
_NOT_REUSED = ("compile_started", "compile_finished", "compile_s")


def build_key(*parts: Any) -> str:
    """A digest of everything a build depends on (JSON-able parts, in order)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Build:
    record: dict[str, Any]  # the CPU check's and the compile's record, times removed
    files: dict[str, Path]  # KEPT artifact name -> local file; "neff" always present
    origin: str  # the attempt key whose compile made it

    def as_reused(self) -> dict[str, Any]:
        return {**self.record, "compile_s": 0.0, "neff_reused_from": self.origin}


class Builds:
    """The index of a target's builds under ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def get(self, key: str) -> Build | None:
        try:
            data = json.loads((self.folder / f"{key}.json").read_text())
            files = {name: Path(path) for name, path in data["files"].items()}
            record, origin = dict(data["record"]), str(data["origin"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        if "neff" not in files or not all(f.is_file() for f in files.values()):
            return None
        return Build(record, files, origin)

    def put(
        self, key: str, record: Mapping[str, Any], artifacts: Mapping[str, str], origin: str
    ) -> None:
        """Keep a successful compile whose NEFF was fetched; anything else is not a build."""
        if record.get("status") != "ok" or "neff" not in artifacts:
            return
        entry = {
            "record": {k: v for k, v in record.items() if k not in _NOT_REUSED},
            "files": {name: artifacts[name] for name in KEPT if name in artifacts},
            "origin": origin,
        }
        write_atomically(self.folder / f"{key}.json", json.dumps(entry))
