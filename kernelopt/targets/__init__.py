"""How a commit's tree is measured: `command` (any benchmark) and `nki` (render -> sim -> profile)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from kernelopt.measurement import Measurement
from kernelopt.program import Program
from kernelopt.targets.base import Target
from kernelopt.targets.command import CommandTarget, ResultsSpec


@dataclass(frozen=True)
class LocalCommand(Target):
    """A command target measured on this machine (device kind ``none``)."""

    kind: ClassVar[str] = "command"
    target: CommandTarget
    device: str = "none"
    deterministic: bool = False

    def measure(self, tree: Path, env: Mapping[str, str] | None = None) -> Measurement:
        return self.target.measure(tree, env=env)

    def spec(self) -> dict[str, Any]:
        """What a host needs to rebuild this target (``python -m kernelopt.remote``)."""
        t = self.target
        return {
            "kind": "command",
            "command": t.command,
            "metric": t.metric,
            "better": t.better,
            "results": {"format": t.results.format, "path": t.results.path},
            "correct": t.correct,
            "config_columns": list(t.config_columns),
            "timeout_s": t.timeout_s,
        }

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> LocalCommand:
        return cls(
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
