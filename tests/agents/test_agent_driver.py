"""`kernelopt run --agent CMD` with a scripted agent: every path an agent round can take."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENT = Path(__file__).with_name("scripted_agent.py")

# The "kernel" is a JSON file; the benchmark reports its time and error.
BENCH = """
import json
k = json.load(open("kernel.json"))
print(f"time: {k['time']}")
print(f"err: {k.get('err', 0)}")
"""

PROGRAM = """---
name: ag
target:
  kind: command
  command: python bench.py
  results: {format: stdout}
  correct: "err == 0"
metric: {name: time, better: lower}
decide: {noise: 1%, confirm: 2, max_samples: 6, max_consecutive_regressions: 3, repair_attempts: %REPAIRS%}
timeout: 30s
---
Make kernel.json faster.
"""


def kernel(time: float, err: float = 0.0) -> str:
    return json.dumps({"time": time, "err": err})


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }.items():
        monkeypatch.setenv(key, value)
    root = tmp_path / "repo"
    (root / "programs").mkdir(parents=True)
    (root / "bench.py").write_text(BENCH)
    (root / "kernel.json").write_text(kernel(100.0))
    git(root, "init", "-q")
    return root


def run_agent(
    root: Path, plan: list[dict], repairs: int = 3, timeout: str = "20s"
) -> tuple[subprocess.CompletedProcess, list[dict]]:
    (root / "programs" / "ag.md").write_text(PROGRAM.replace("%REPAIRS%", str(repairs)))
    git(root, "add", "-A")
    if git(root, "status", "--porcelain").strip():
        git(root, "commit", "-qm", "setup")
    plan_file = root.parent / "plan.json"
    plan_file.write_text(json.dumps(plan))
    log_file = root.parent / "agent.log"
    env = {
        **os.environ,
        "SCRIPTED_AGENT_PLAN": str(plan_file),
        "SCRIPTED_AGENT_LOG": str(log_file),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelopt.cli",
            "run",
            "programs/ag.md",
            "--tag",
            "t",
            "--max-candidates",
            str(len(plan)),
            "--agent",
            f"{sys.executable} {AGENT}",
            "--agent-timeout",
            timeout,
            "--json",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    asked = (
        [json.loads(line) for line in log_file.read_text().splitlines()]
        if log_file.exists()
        else []
    )
    return proc, asked


def notes(root: Path) -> list[dict]:
    out = []
    n = 0
    while True:
        ref = f"refs/kernelopt/ag-t/attempts/{n}"
        if subprocess.run(
            ["git", "rev-parse", "-q", "--verify", ref], cwd=root, capture_output=True
        ).returncode:
            return out
        out.append(json.loads(git(root, "notes", "--ref", "refs/notes/kernelopt", "show", ref)))
        n += 1


def worktree(root: Path) -> Path:
    return root / ".git" / "kernelopt" / "worktrees" / "ag-t"


def test_a_good_edit_is_kept_and_a_bad_one_reverted_and_counted(repo: Path) -> None:
    proc, asked = run_agent(
        repo,
        [
            {"edit": {"kernel.json": kernel(80.0)}, "hypothesis": "fuse the loads"},
            {"edit": {"kernel.json": kernel(95.0)}, "hypothesis": "unroll everything"},
        ],
    )
    assert proc.returncode == 0, proc.stderr
    records = notes(repo)
    assert [r["verdict"] for r in records] == ["baseline", "keep", "regression"]
    assert records[1]["hypothesis"] == "fuse the loads" and records[1]["kind"] == "agent"
    assert records[2]["counters"]["consecutive_regressions"] == 1
    assert [a["ask"]["mode"] for a in asked] == ["improve", "improve"]
    assert asked[1]["best"] == pytest.approx(80.0)  # the second round saw the new best
    wt = worktree(repo)
    assert json.loads((wt / "kernel.json").read_text())["time"] == 80.0
    assert "fuse the loads" in (wt / "performance.md").read_text()
    assert "unroll everything" not in (wt / "performance.md").read_text()
    log = git(repo, "log", "--format=%s", "kernelopt/ag-t")
    assert "fuse the loads" in log and "unroll everything" not in log


def test_an_incorrect_edit_is_repaired_on_the_second_try(repo: Path) -> None:
    proc, asked = run_agent(
        repo,
        [
            {"edit": {"kernel.json": kernel(70.0, err=1.0)}, "hypothesis": "skip the tail"},
            {"edit": {"kernel.json": kernel(75.0, err=0.5)}},
            {"edit": {"kernel.json": kernel(75.0, err=0.0)}},
        ],
    )
    assert proc.returncode == 0, proc.stderr
    records = notes(repo)
    assert [r["verdict"] for r in records] == ["baseline", "incorrect", "incorrect", "keep"]
    assert [a["ask"]["mode"] for a in asked] == ["improve", "repair", "repair"]
    assert asked[1]["ask"]["error"] and asked[1]["ask"]["hypothesis"] == "skip the tail"
    # Repairs keep the hypothesis and say which attempt they repair.
    assert records[2]["hypothesis"] == "skip the tail" and records[2]["repair_of"] == 1
    assert records[3]["repair"] == 2
    assert all(r["counters"]["consecutive_regressions"] == 0 for r in records)
    assert json.loads((worktree(repo) / "kernel.json").read_text()) == {"time": 75.0, "err": 0.0}


def test_an_incorrect_idea_is_abandoned_after_three_repairs(repo: Path) -> None:
    bad = {"edit": {"kernel.json": kernel(60.0, err=1.0)}, "hypothesis": "drop a term"}
    proc, asked = run_agent(
        repo,
        [
            bad,
            {"edit": {"kernel.json": kernel(61.0, err=1.0)}},
            {"edit": {"kernel.json": kernel(62.0, err=1.0)}},
            {"edit": {"kernel.json": kernel(63.0, err=1.0)}},
            {"edit": {"kernel.json": kernel(90.0)}, "hypothesis": "new idea"},
        ],
    )
    assert proc.returncode == 0, proc.stderr
    records = notes(repo)
    assert [r["verdict"] for r in records] == ["baseline"] + ["incorrect"] * 4 + ["keep"]
    assert [a["ask"]["mode"] for a in asked] == ["improve", "repair", "repair", "repair", "improve"]
    # The abandoned idea never reached the branch or the ledger.
    assert "drop a term" not in (worktree(repo) / "performance.md").read_text()
    assert json.loads((worktree(repo) / "kernel.json").read_text())["time"] == 90.0


def test_a_crash_a_timeout_and_a_no_op_are_failed_attempts(repo: Path) -> None:
    proc, asked = run_agent(
        repo,
        [
            {"edit": {"kernel.json": kernel(50.0)}, "hypothesis": "crash midway", "exit": 1},
            {"hypothesis": "think forever", "sleep": 30},
            {"hypothesis": "change nothing"},
        ],
        timeout="2s",
    )
    assert proc.returncode == 0, proc.stderr
    records = notes(repo)
    assert [r["verdict"] for r in records] == ["baseline", "failed", "failed", "failed"]
    assert "exited with status 1" in records[1]["error"]
    assert "timed out" in records[2]["error"]
    assert "no change" in records[3]["error"]
    wt = worktree(repo)
    assert json.loads((wt / "kernel.json").read_text())["time"] == 100.0  # branch at BEST
    assert git(wt, "status", "--porcelain") == ""
    best = git(repo, "rev-parse", "refs/kernelopt/ag-t/best").strip()
    assert git(wt, "rev-parse", "HEAD").strip() == best


def test_lessons_come_from_the_notes(repo: Path) -> None:
    run_agent(
        repo,
        [
            {"edit": {"kernel.json": kernel(80.0)}, "hypothesis": "fuse the loads"},
            {"edit": {"kernel.json": kernel(95.0)}, "hypothesis": "unroll everything"},
        ],
    )
    out = subprocess.run(
        [sys.executable, "-m", "kernelopt.cli", "log", "--lessons", "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    assert [e["hypothesis"] for e in data["kept"]] == ["fuse the loads"]
    assert [e["hypothesis"] for e in data["regressed"]] == ["unroll everything"]
    assert data["regressed"][0]["gain"] < 0
