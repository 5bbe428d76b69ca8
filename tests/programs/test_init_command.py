"""A new user's first run: init, commit, run, with nothing edited in between."""

from __future__ import annotations

import shlex
from pathlib import Path

from benchmarks_support.gitrepo import Cli, git, make_repo


def test_init_then_commit_then_run_works_as_printed(tmp_path: Path, cli: Cli) -> None:
    root = make_repo(tmp_path / "fresh")

    before_commit = cli("run", "programs/blur.md", cwd=root)
    init = cli("init", "--name", "blur", cwd=root)
    assert init.exit_code == 0
    commit_line, run_line = init.output.strip().splitlines()[-2:]
    assert commit_line.strip().startswith("git add programs ir performance.md && git commit")
    assert run_line.strip() == "kernelopt run programs/blur.md"
    git(root, "add", "programs", "ir", "performance.md")
    git(root, "commit", "-q", "-m", "kernelopt: blur")

    result = cli("run", "programs/blur.md", "--tag", "t", "--max-candidates", "1", cwd=root)

    assert before_commit.exit_code == 2  # the program did not exist yet: a usage error
    assert result.exit_code == 0, result.output
    assert "BASELINE | time_us" in result.output
    # The label counts to this invocation's last candidate (--max-candidates 1).
    assert "#1 of 1 knob: BLOCK 16 -> 64" in result.output


def test_run_in_a_repository_without_a_commit_is_a_usage_error(tmp_path: Path, cli: Cli) -> None:
    root = make_repo(tmp_path / "fresh")
    cli("init", "--name", "blur", cwd=root)

    result = cli("run", "programs/blur.md", cwd=root)

    assert result.exit_code == 2
    assert "no commit yet; commit your code first" in result.stderr
    assert "Traceback" not in result.output + result.stderr


MATMUL_AT_ROOT = """
from kernelopt.ir import NKIMatmul


def f_nkigym(lhsT, rhs):
    return NKIMatmul()(stationary=lhsT, moving=rhs)


def f_numpy(lhsT, rhs):
    return lhsT.T @ rhs


INPUT_SPECS = {"lhsT": ((128, 128), "bfloat16"), "rhs": ((128, 512), "bfloat16")}
"""


def test_the_printed_git_add_commits_a_workload_outside_ir(tmp_path: Path, cli: Cli) -> None:
    """A workload at the top of the repository gets its knobs and kernel beside it, so
    the printed `git add` names them: `git add programs ir ...` failed (no ir/)."""
    root = make_repo(tmp_path / "fresh")
    (root / "mm.py").write_text(MATMUL_AT_ROOT)
    init = cli("init", "--name", "mm", "--kind", "nki", "--workload", "mm.py", cwd=root)
    assert init.exit_code == 0, init.output
    commit_line = init.output.strip().splitlines()[-2].strip()
    assert commit_line.startswith("git add programs performance.md ")
    added = shlex.split(commit_line.split(" && ")[0])[2:]
    assert set(added) == {"programs", "performance.md", "mm.py", "mm_knobs.json", "mm_kernel.py"}
    git(root, "add", *added)
    git(root, "commit", "-q", "-m", "kernelopt: mm")
    assert git(root, "status", "--porcelain").strip() == ""
