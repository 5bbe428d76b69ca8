"""Measuring a tree on a host: ``python -m kernelopt.remote < spec.json``.

The same target code that measures locally runs on the host, in the shipped
tree (the working directory). The target's spec arrives as JSON on stdin; the
Measurement leaves as one marked JSON line on stdout, so whatever else the
benchmark prints cannot be mistaken for it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from kernelopt.measurement import FAILED, Measurement
from kernelopt.targets.base import target_from_spec

MARK = "KERNELOPT-MEASUREMENT "


def parse_output(stdout: str) -> Measurement | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            return Measurement.from_json(json.loads(line[len(MARK) :]))
    return None


def main() -> int:
    try:
        spec = json.loads(sys.stdin.read())
        target = target_from_spec(spec)
        env = {k: v for k, v in spec.get("env", {}).items()}
        os.environ.update(env)
        if spec.get("op") == "reference":
            # The compiler baseline, on the device the caller leased (targets that have one).
            found = target.reference(Path.cwd(), env=env)
            measurement = found or Measurement.failure(FAILED, "this target has no reference")
        else:
            measurement = target.measure(Path.cwd(), env=env)
    except Exception as exc:  # everything becomes data for the runner
        measurement = Measurement.failure(
            FAILED, f"remote measurement failed: {type(exc).__name__}: {exc}"
        )
    sys.stdout.write("\n" + MARK + json.dumps(measurement.to_json(), default=str) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
