"""Commands that help texts and program briefs give work as written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelopt.cli import main

ROOT = Path(__file__).resolve().parents[1]
BRIEF_COMMAND = re.compile(r"`(kernelopt ir (?:validate|show|render)[^`]*)`")


def brief_commands() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "programs").glob("*.md")):
        for command in BRIEF_COMMAND.findall(path.read_text()):
            found.append((path.name, command))
    return found


def test_the_briefs_name_ir_commands() -> None:
    assert any("ir validate" in c for _, c in brief_commands())


@pytest.mark.parametrize(("brief", "command"), brief_commands())
def test_a_briefs_ir_command_runs_from_the_repository_root(
    brief: str, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = shlex.split(command.split(">")[0])[1:]  # what follows `kernelopt`, no redirection
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, words, catch_exceptions=False)
    assert result.exit_code == 0, f"{brief}: {command}\n{result.output}"


def test_the_agent_example_of_run_help_passes_the_context_text(tmp_path: Path) -> None:
    help_text = CliRunner().invoke(main, ["run", "--help"]).output
    example = next(line.strip() for line in help_text.splitlines() if "--agent '" in line)
    agent = shlex.split(example)[shlex.split(example).index("--agent") + 1]
    context = tmp_path / "context.md"
    context.write_text("IMPROVE: the worktree is at BEST\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "my-agent"  # prints the task it was given
    fake.write_text('#!/bin/sh\n[ "$1" = --task ] && printf "%s" "$2"\n')
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "KERNELOPT_CONTEXT": str(context),
    }
    out = subprocess.run(["bash", "-c", agent], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.startswith("IMPROVE: the worktree is at BEST")
