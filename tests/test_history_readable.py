"""History a person can read: runs with their BEST and state, subjects cut at words,
hypotheses without preamble, every subcommand listed in help."""

from __future__ import annotations

from benchmarks_support.gitrepo import Cli, RepoFactory
from click.testing import CliRunner

from kernelopt.cli import main
from kernelopt.history import candidate_message
from kernelopt.hypothesis import cut_words
from kernelopt.ledger import Labels, kept_message


def test_runs_lists_best_attempts_and_state(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = bench_repo(space=[100, 80, 130], decide={"max_consecutive_regressions": 1})
    cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    cli("run", str(repo.program), "--tag", "u", "--max-candidates", "0", cwd=repo.root)

    rows = {r["run"]: r for r in cli.json("runs", cwd=repo.root)}
    text = cli("runs", cwd=repo.root).output

    stopped, open_run = rows["x-t"], rows["x-u"]
    assert stopped["best_commit"] == repo.rev(repo.ref("best")) and stopped["best_attempt"] == 1
    assert (stopped["attempts"], stopped["kept"], stopped["stopped"]) == (2, 1, True)
    assert open_run["attempts"] == 0 and open_run["stopped"] is False
    line = next(line for line in text.splitlines() if line.startswith("x-t"))
    assert stopped["best_commit"][:10] in line and "2 (1 kept)" in line and "stopped" in line
    assert "open" in next(line for line in text.splitlines() if line.startswith("x-u"))


def test_subjects_are_cut_at_a_word() -> None:
    hypothesis = "keep the accumulator in registers " * 6
    subject = candidate_message("r", 3, "edit", hypothesis).splitlines()[0]
    assert len(subject) <= 120 and subject.endswith("...")
    assert subject[:-3].split()[-1] in hypothesis.split()  # a whole word before the cut
    labels = Labels("r", "p.md", "cmd", "k", "time", "lower")
    ledger_subject, _ = kept_message(
        3, "a" * 40, {"verdict": "keep", "gain": 0.1, "hypothesis": hypothesis}, labels
    )
    assert ledger_subject.endswith("...") and ledger_subject[:-3].split()[-1] in hypothesis.split()
    assert cut_words("short", 80) == "short"


def test_sim_help_lists_check() -> None:
    text = CliRunner().invoke(main, ["sim", "--help"]).output
    assert "check" in text.split("Commands:")[1]


def test_a_dirty_checkout_is_ignored_with_a_one_line_warning(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = bench_repo(space=[100, 80])
    # Uncommitted: a program edit (another knob space) and a knobs edit.
    repo.program.write_text(repo.program.read_text().replace("- 80", "- 70"))
    (repo.root / "knobs.json").write_text('{"X": 50}\n')

    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)

    assert result.exit_code == 0, result.output
    [warning] = [line for line in result.stderr.splitlines() if "warning" in line]
    assert "programs/x.md (the program)" in warning and "knobs.json (its knob file)" in warning
    notes = repo.notes()
    assert notes[0]["metric"] == 100.0  # the committed knobs, not the edit
    assert [n["knobs"] for n in notes.values()][1] == {"X": 80}  # the committed space


def test_the_readmes_git_log_line_leaves_the_notes_commits_out(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    import re
    import subprocess
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    line = next(m for m in re.findall(r"^(git log [^#\n]*--all[^#\n]*?)\s*(?:#|$)", readme, re.M))
    repo = bench_repo(space=[100, 80])
    cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    everything = subprocess.run(
        ["bash", "-c", "git log --oneline --all"], cwd=repo.root, capture_output=True, text=True
    ).stdout
    shown = subprocess.run(
        ["bash", "-c", line], cwd=repo.root, capture_output=True, text=True, check=True
    ).stdout
    assert "Notes added by" in everything
    assert "Notes added by" not in shown and "kernelopt #1 knob" in shown
