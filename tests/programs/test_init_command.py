"""A new user's first run: init, commit, run, with nothing edited in between."""

from __future__ import annotations

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
