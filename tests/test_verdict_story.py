"""Every verdict stated against the figure it was decided on, with its reason and,
for a failure, the benchmark's own last lines; one BEST id everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, git

from kernelopt.decide import Assessment, BestFigure, Verdict, explain, kept_figure


def started(bench_repo: RepoFactory, cli: Cli, **program: Any) -> BenchRepo:
    repo = bench_repo(**{"space": None, **program})
    result = cli("run", str(repo.program), "--tag", "t", cwd=repo.root)
    assert result.exit_code == 0, result.output
    return repo


def try_x(cli: Cli, repo: BenchRepo, x: Any, message: str = "") -> tuple[int, dict[str, Any], str]:
    (repo.worktree() / "knobs.json").write_text(json.dumps({"X": x}, indent=2) + "\n")
    result = cli("try", "-m", message or f"X = {x}", "--json", cwd=repo.worktree())
    return result.exit_code, json.loads(result.stdout), result.output


def lower_is_better(new: float, old: float) -> bool:
    return new < old


def test_a_keep_never_shows_best_getting_worse_after_a_lucky_baseline(
    bench_repo: RepoFactory, cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The baseline's only sample reads 50 (lucky); BEST then measures 100 beside the
    # candidate, which measures 80: a real keep, and BEST's figure must go down.
    lucky = tmp_path / "lucky"
    lucky.touch()
    monkeypatch.setenv("BENCH_LUCKY_FILE", str(lucky))
    repo = started(bench_repo, cli)

    code, data, _ = try_x(cli, repo, 80)

    assert code == 0 and data["verdict"] == "keep"
    assert data["basis"]["against"] == "remeasured" and data["basis"]["best"] == 100.0
    # BEST's figure at the verdict averages every sample of BEST: 50 and the pairs' 100s.
    pairs = data["basis"]["pairs"]
    assert data["previous_best"] == pytest.approx((50 + 100 * pairs) / (1 + pairs))
    assert lower_is_better(data["best_metric"], data["previous_best"])
    status = cli.json("status", cwd=repo.root)
    assert status["best_metric"] == data["best_metric"]
    # The log lists the pair behind the keep, and no keep slower than what it was compared to.
    rows = cli.json("log", cwd=repo.root)
    assert rows[1]["metric"] < rows[1]["basis"]["best"]
    assert rows[1]["best_metric"] < rows[1]["previous_best"]
    plain = cli("log", "--plain", cwd=repo.root).output
    assert f"vs BEST 100 ({pairs} pairs)" in plain
    table = cli("log", cwd=repo.root).output
    assert f"100 ({pairs} pairs)" in table
    assert f"vs BEST 100 measured beside it ({pairs} pairs)" in repo.ledger()


def test_a_keep_after_the_machine_slowed_down_still_moves_best_down() -> None:
    # BEST's estimate holds many quick samples from a quiet machine; now everything is
    # slower, and the candidate beats BEST beside it: its figure is scaled, not its raw mean.
    before = BestFigure(17.0, 50).updated([25.0] * 7)
    kept = kept_figure(before, [21.7] * 7, [25.0] * 7, "lower")
    assert kept.metric is not None and before.metric is not None
    assert kept.metric < before.metric
    assert kept.metric == pytest.approx(before.metric * 21.7 / 25.0)
    # On a steady machine the new BEST's figure is its own mean.
    steady = kept_figure(BestFigure(25.0, 3).updated([25.0] * 7), [21.7] * 7, [25.0] * 7, "lower")
    assert steady.samples == 7 and steady.metric == pytest.approx(21.7)


def test_an_undecided_tie_says_why() -> None:
    a = Assessment(Verdict.TIE, 0.134, -0.02, 0.29, 6, "undecided")
    text = explain(a, 0.03, shown=0.144, better="higher")
    assert text.startswith("+14.4 % but not significant after 6 pairs")
    assert "p < 0.001" in text and "3 %" in text


def test_every_verdict_carries_its_reason(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)

    verdicts = {x: try_x(cli, repo, x) for x in (130, 100.1, 80)}

    for x, (_, data, _) in verdicts.items():
        note = repo.note(data["commit"])
        assert data["reason"] and note["reason"] == data["reason"], x
    assert "worse beyond the noise setting" in verdicts[130][1]["reason"]
    assert "better beyond the noise setting" in verdicts[80][1]["reason"]
    rows = cli.json("log", cwd=repo.root)
    assert [r["reason"] for r in rows[1:]] == [v[1]["reason"] for v in verdicts.values()]
    printed = cli("try", "-m", "X = 131", cwd=_edit(repo, 131)).output
    assert "why: " in printed and "worse beyond the noise setting" in printed


def _edit(repo: BenchRepo, x: Any) -> Path:
    (repo.worktree() / "knobs.json").write_text(json.dumps({"X": x}, indent=2) + "\n")
    return repo.worktree()


def test_a_crash_carries_the_benchmarks_own_last_lines(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)

    code, data, _ = try_x(cli, repo, "fail")

    assert code == 13
    assert "bench: the kernel crashed" in data["output_tail"]
    rows = cli.json("log", cwd=repo.root)
    assert "bench: the kernel crashed" in rows[-1]["output_tail"]
    assert "bench: the kernel crashed" in cli("log", "--plain", cwd=repo.root).output
    assert "bench: the kernel crashed" in cli("log", "--lessons", cwd=repo.root).output
    lessons = cli.json("log", "--lessons", cwd=repo.root)
    assert "bench: the kernel crashed" in lessons["failed"][0]["output"]
    printed = cli("try", "-m", "again", cwd=_edit(repo, "fail")).output
    assert "bench: the kernel crashed" in printed


def test_one_best_id_in_status_the_best_ref_and_the_notes(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    try_x(cli, repo, 80)
    try_x(cli, repo, "fail")

    best = repo.rev(repo.ref("best"))
    status = cli.json("status", cwd=repo.root)
    newest = repo.notes()[max(repo.attempt_refs())]
    assert status["best_commit"] == best == newest["best_commit"]
    top = git(repo.root, "log", "-1", "--format=%H", repo.branch()).strip()
    assert top == best
    assert best[:10] in "\n".join(cli("status", cwd=repo.root).output.splitlines()[:5])


def test_json_commands_answer_json_on_every_outcome(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    repo = started(bench_repo, cli)

    nothing = cli("try", "-m", "no change", "--json", cwd=repo.worktree())
    outside = cli("try", "-m", "x", "--json", cwd=repo.root)
    no_runs = cli("status", "--json", cwd=bench_repo(space=None).root)

    assert nothing.exit_code == 2
    assert json.loads(nothing.stdout)["error"]["kind"] == "nothing_to_try"
    assert "nothing to try" in json.loads(nothing.stdout)["error"]["message"]
    assert outside.exit_code == 2 and json.loads(outside.stdout)["error"]["exit_code"] == 2
    assert no_runs.exit_code == 2 and "error" in json.loads(no_runs.stdout)
    assert list(repo.attempt_refs()) == [0]


def test_one_type_per_field_and_profiles_of_wrong_work_are_flagged(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)

    _, regression, _ = try_x(cli, repo, 130, "too big")
    _, wrong, _ = try_x(cli, repo, "wrong")

    status = cli.json("status", cwd=repo.root)
    assert isinstance(regression["recent_regressions"], list)
    assert regression["recent_regressions"][0]["hypothesis"] == "too big"
    assert type(status["recent_regressions"]) is type(regression["recent_regressions"])
    assert regression["profile_of_correct_work"] is True
    assert wrong["verdict"] == "incorrect" and wrong["profile_of_correct_work"] is False
    rows = cli.json("log", cwd=repo.root)
    assert [r["profile_of_correct_work"] for r in rows] == [True, True, False]


def test_the_program_reference_explains_the_noise_rule() -> None:
    from kernelopt.schema import reference_markdown

    doc = reference_markdown()
    rule = doc[doc.index("## How the noise rule decides") :]
    for words in ("p < 0.001", "decide.max_samples", "decide.confirm", "reason", "beside"):
        assert words in rule
    noise_row = next(line for line in doc.splitlines() if line.startswith("| `decide.noise`"))
    assert "significantly" in noise_row


def test_the_agents_context_carries_the_crash_output_and_the_reasons(
    bench_repo: RepoFactory, cli: Cli, tmp_path: Path
) -> None:
    from kernelopt.agent import build_context, next_ask, render_context
    from kernelopt.history import RunRepo
    from kernelopt.program import load_program
    from kernelopt.proposers.base import Observations

    repo = started(bench_repo, cli)
    try_x(cli, repo, 130)
    try_x(cli, repo, "fail")
    program = load_program(repo.program)
    run = RunRepo(repo.root, repo.run_id())
    state = Observations().state(run.load_state(), program.better, 0)

    context = build_context(
        next_ask(state.history, 3),
        state,
        program,
        run_id=repo.run_id(),
        worktree=run.worktree,
        hypothesis_file=tmp_path / "h",
    )
    text = render_context(context)

    crash = context["recent_attempts"][-1]
    assert "bench: the kernel crashed" in crash["output_tail"]
    assert "bench: the kernel crashed" in text
    assert "worse beyond the noise setting" in text  # the regression's reason
    assert context["best"]["commit"] == repo.rev(repo.ref("best"))
    assert context["best"]["metric"] == cli.json("status", cwd=repo.root)["best_metric"]


def test_a_keeps_note_names_the_new_best_and_what_it_was_compared_with(
    bench_repo: RepoFactory, cli: Cli
) -> None:
    repo = started(bench_repo, cli)
    before = repo.rev(repo.ref("best"))

    _, data, _ = try_x(cli, repo, 80)

    after = repo.rev(repo.ref("best"))
    note = repo.note(data["commit"])
    assert note["best_commit"] == after == cli.json("status", cwd=repo.root)["best_commit"]
    assert note["compared_with"] == before != after


def test_a_refused_run_and_a_bad_option_answer_json_too(tmp_path: Path, cli: Cli) -> None:
    missing = cli("run", str(tmp_path / "nope.md"), "--json", cwd=tmp_path)
    bad_option = cli("log", "--json", "--no-such-option", cwd=tmp_path)

    assert missing.exit_code == 2 and json.loads(missing.stdout)["error"]["kind"] == "usage"
    assert (
        bad_option.exit_code == 2
        and "no-such-option" in json.loads(bad_option.stdout)["error"]["message"]
    )


def test_lessons_say_why_a_change_tied(bench_repo: RepoFactory, cli: Cli) -> None:
    repo = started(bench_repo, cli)
    _, tie, _ = try_x(cli, repo, 100.1)

    text = cli("log", "--lessons", cwd=repo.root).output

    assert tie["verdict"] == "tie" and tie["reason"] in text
