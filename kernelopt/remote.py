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
from typing import Any

from kernelopt.measurement import FAILED, Measurement

MARK = "KERNELOPT-MEASUREMENT "


def target_from_spec(spec: dict[str, Any]) -> Any:
    kind = spec.get("kind")
    if kind == "command":
        from kernelopt.targets import LocalCommand
        from kernelopt.targets.command import CommandTarget, ResultsSpec

        return LocalCommand(
            CommandTarget(
                command=spec["command"],
                metric=spec["metric"],
                better=spec["better"],
                results=ResultsSpec(spec["results"]["format"], spec["results"].get("path")),
                correct=spec.get("correct"),
                config_columns=tuple(spec.get("config_columns") or ()),
                timeout_s=float(spec["timeout_s"]),
            )
        )
    if kind == "nki-sim":
        from kernelopt.targets.nki import NkiSimTarget

        return NkiSimTarget(
            workload=spec["workload"],
            kernel=spec["kernel"],
            func=spec.get("func"),
            seeds=tuple(spec.get("seeds") or (0,)),
            atol=float(spec.get("atol", 5e-3)),
            rtol=float(spec.get("rtol", 5e-3)),
            rel_l2=float(spec["rel_l2"]) if spec.get("rel_l2") is not None else None,
            timeout_s=float(spec.get("timeout_s", 600.0)),
            isolate=False,  # this process is the isolated one
            compiler_args=tuple(spec.get("compiler_args") or ()),
        )
    if kind == "nki-neuron":
        from kernelopt.neuron.target import NeuronTarget

        return NeuronTarget.from_spec(spec)
    raise ValueError(f"unknown target kind in spec: {kind!r}")


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
