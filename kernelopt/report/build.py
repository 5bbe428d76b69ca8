"""Write a run's report: frames from the notes, PNGs, then the page beside them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kernelopt.report.plots as plots
from kernelopt.history import HistoryError, RunRepo, RunState
from kernelopt.report.frames import run_frames
from kernelopt.report.page import Figures, render_page

INDEX = "index.html"


class ReportError(ValueError):
    """The report cannot be written; the message says why."""


@dataclass(frozen=True)
class Report:
    """Where a report was written: the page and every file beside it."""

    out: Path
    index: Path
    files: tuple[Path, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "out": str(self.out),
            "index": str(self.index),
            "files": [str(f) for f in self.files],
        }


@dataclass(frozen=True)
class ProgramFacts:
    """What the report takes from the run's program when it can still be read."""

    better: str | None = None
    max_consecutive_regressions: int | None = None
    program: str | None = None


def write_report(
    state: RunState,
    out: str | Path,
    *,
    facts: ProgramFacts | None = None,
    embed: bool = False,
    calibration: Mapping[str, Any] | None = None,
) -> Report:
    """Write ``out/index.html`` and its PNGs for ``state``; returns what was written.

    ``calibration``: a screened run's live calibration figures, shown when given."""
    if not state.attempts:
        raise ReportError(
            f"run {state.run_id} has no recorded attempts yet: nothing to report "
            "(start it with `kernelopt run PROGRAM`)"
        )
    facts = facts or ProgramFacts()
    out = Path(out).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create report directory {out}: {exc.strerror}") from None
    frames = run_frames(state, facts.better)
    figures = Figures(
        metric=plots.metric_over_attempts(frames, out / "metric.png"),
        counters=plots.counters_over_attempts(
            frames, out / "counters.png", facts.max_consecutive_regressions
        ),
        gains=plots.gain_per_keep(frames, out / "gains.png"),
        classes=plots.classes_over_attempts(frames, out / "classes.png"),
        profile=plots.profile_best_vs_baseline(frames, out / "profile.png"),
    )
    context: Mapping[str, str] = {"program": facts.program} if facts.program else {}
    index = out / INDEX
    page = render_page(frames, figures, out, embed=embed, context=context, calibration=calibration)
    index.write_text(page)
    pngs = [
        p
        for p in (figures.metric, figures.gains, figures.classes, figures.counters, figures.profile)
        if p is not None
    ]
    return Report(out=out, index=index, files=(index, *pngs))


def program_facts(repo_root: Path, run_id: str) -> ProgramFacts:
    """Direction, stop limit and program path from the run's program, if it still loads.

    A report must work for a run whose worktree or program is gone, so any
    failure here leaves the report to infer what it can from the notes.
    """
    from kernelopt.program import ProgramError
    from kernelopt.session import SessionError, program_for_run

    try:
        program = program_for_run(repo_root, run_id)
    except (ProgramError, SessionError, HistoryError, OSError):
        return ProgramFacts()
    return ProgramFacts(
        better=program.better,
        max_consecutive_regressions=program.decide.max_consecutive_regressions,
        program=program.path.name,
    )


def default_report_dir(repo: RunRepo) -> Path:
    """Where a report goes unless told: under the repository's git directory.

    Beside the run's worktree (``.git/kernelopt/worktrees/<run>``), so the
    user's checkout and the run's worktree never gain a stray directory and
    the report cannot ride along into a candidate's commit.
    """
    return repo.common_dir / "kernelopt" / "reports" / repo.run_id


def report_for_run(
    repo_root: str | Path, run_id: str, out: str | Path | None = None, *, embed: bool = False
) -> Report:
    """Load a run from its repository and write its report (to ``out`` or the default)."""
    from kernelopt.proposers.live_calibration import read_live

    root = Path(repo_root)
    repo = RunRepo(root, run_id)
    target = Path(out) if out is not None else default_report_dir(repo)
    return write_report(
        repo.load_state(),
        target,
        facts=program_facts(root, run_id),
        embed=embed,
        calibration=read_live(repo.common_dir, run_id),
    )
