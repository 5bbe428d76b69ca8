"""target.format runs on every candidate before it is committed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from benchmarks_support.gitrepo import git
from benchmarks_support.gitrepo import run_kernelopt as kernelopt

BENCH = """
import json
k = json.load(open("kernel.json"))
print(f"time: {k['time']}")
"""

# A formatter that rewrites kernel.json canonically (sorted keys, indent 2),
# and fails on a file containing the word "unformattable".
FORMATTER = """
import json, sys
text = open("kernel.json").read()
if "unformattable" in text:
    sys.exit("fmt: cannot format kernel.json")
open("kernel.json", "w").write(json.dumps(json.loads(text), indent=2, sort_keys=True) + "\\n")
"""

PROGRAM = f"""---
name: fm
target:
  kind: command
  command: {sys.executable} bench.py
  results: {{format: stdout}}
  format: {sys.executable} fmt.py
metric: {{name: time, better: lower}}
decide: {{noise: 1%, confirm: 2, max_samples: 4}}
---
Format before commit.
"""


@pytest.fixture
def worktree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in ("GIT_AUTHOR", "GIT_COMMITTER"):
        monkeypatch.setenv(f"{key}_NAME", "t")
        monkeypatch.setenv(f"{key}_EMAIL", "t@example.com")
    root = tmp_path / "repo"
    (root / "programs").mkdir(parents=True)
    (root / "bench.py").write_text(BENCH)
    (root / "fmt.py").write_text(FORMATTER)
    (root / "kernel.json").write_text('{"time": 100, "a": 1}\n')
    (root / "programs" / "fm.md").write_text(PROGRAM)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "setup")
    proc = kernelopt(root, "run", "programs/fm.md", "--tag", "t")
    assert proc.returncode == 0, proc.stderr
    return root / ".git" / "kernelopt" / "worktrees" / "fm-t"


def test_the_measured_commit_is_already_formatted(worktree: Path) -> None:
    (worktree / "kernel.json").write_text('{"time": 50,   "a": 1}')
    proc = kernelopt(worktree, "try", "-m", "halve the time", "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["verdict"] == "keep", proc.stdout + proc.stderr
    committed = git(worktree, "show", f"{data['commit']}:kernel.json")
    assert committed == json.dumps({"a": 1, "time": 50}, indent=2, sort_keys=True) + "\n"
    assert data["samples"] >= 2  # measured as committed, with no extra run after formatting


def test_a_failing_formatter_makes_the_attempt_failed(worktree: Path) -> None:
    (worktree / "kernel.json").write_text('{"time": 10, "note": "unformattable"}')
    proc = kernelopt(worktree, "try", "-m", "a change the formatter rejects", "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 13 and data["verdict"] == "failed"
    assert "formatter" in data["error"] and "cannot format kernel.json" in data["error"]
    # The rejected change stays reachable; the worktree is back at BEST.
    assert "unformattable" in git(worktree, "show", f"{data['commit']}:kernel.json")
    assert git(worktree, "status", "--porcelain") == ""
    assert '"time": 100' in (worktree / "kernel.json").read_text()
