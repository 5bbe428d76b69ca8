"""How a commit's tree is measured: `command` (any benchmark) and `nki` (render -> sim -> profile)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelopt.measurement import Measurement
from kernelopt.program import Program
from kernelopt.targets.command import CommandTarget, ResultsSpec


@dataclass(frozen=True)
class LocalCommand:
    """A command target measured on this machine (device kind ``none``)."""

    target: CommandTarget
    device: str = "none"
    deterministic: bool = False

    def measure(self, tree: Path) -> Measurement:
        return self.target.measure(tree)


def command_target(program: Program) -> CommandTarget:
    t = program.target
    assert t.command is not None
    return CommandTarget(
        command=t.command,
        metric=program.metric,
        better=program.better,
        results=ResultsSpec(t.results_format, t.results_path),
        correct=t.correct,
        config_columns=t.config_columns,
        timeout_s=program.timeout_s,
    )
