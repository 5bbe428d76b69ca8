"""What ``kernelopt status`` and ``kernelopt log`` show, built from the run's records.

One dict per view, the same for the text output and for ``--json``, so the
two can never disagree.
"""

from __future__ import annotations

from typing import Any

from kernelopt.history import RunRepo, RunState
from kernelopt.note import failure_output
from kernelopt.records import measured_on


def status_view(repo: RunRepo, state: RunState) -> dict[str, Any]:
    """Where a run stands: BEST, its metric and profile, the baseline, counters, stop;
    with a screened run's live refit, how far the model is from the device."""
    from kernelopt.proposers.live_calibration import read_live

    best = state.best
    base = state.baseline
    counters = state.counters
    return {
        "run": repo.run_id,
        "worktree": str(repo.worktree),
        "branch": repo.branch,
        # One BEST id everywhere: the best ref, the branch's commit at BEST (`git log`
        # shows it on top); the attempt that was measured is best_attempt.
        "best_commit": state.best_commit if best else None,
        "best_attempt": best.attempt if best else None,
        "best_metric": state.best_metric,
        "best_samples": state.best_figure.samples,
        "metric": (best.note.get("metric_name") if best else None),
        "baseline_metric": state.baseline_metric,
        "reference": _reference_of(base.note if base else {}),
        "attempts": len([r for r in state.attempts if r.attempt > 0]),
        "consecutive_regressions": counters.consecutive_regressions,
        "recent_regressions": list(counters.recent_regressions),
        "stopped": state.stop is not None,
        "stop_reason": state.stop.get("reason") if state.stop else None,
        "best_profile": (best.measurement.get("profile") if best else None) or {},
        "calibration": read_live(repo.common_dir, repo.run_id),
    }


def log_rows(state: RunState) -> list[dict[str, Any]]:
    """Every attempt, kept or not, oldest first."""
    return [
        {
            "attempt": r.attempt,
            "commit": r.commit,
            "kind": r.kind,
            "verdict": r.verdict,
            "metric": r.metric,
            "best_metric": r.note.get("best_metric"),
            "previous_best": r.note.get("previous_best"),
            "gain": r.note.get("gain"),
            "basis": r.note.get("basis"),
            "hypothesis": r.hypothesis,
            "reason": r.note.get("reason") or "",
            "error": r.note.get("error", ""),
            "output_tail": failure_output(r.note),
            "time": r.note.get("time"),
            **measured_on(r.measurement),
        }
        for r in state.attempts
    ]


def _reference_of(note: dict[str, Any]) -> dict[str, Any] | None:
    ref = note.get("reference")
    if not ref:
        return None
    return {"what": ref.get("what"), "metric": ref.get("metric"), "why": ref.get("why")}


def run_row(repo: RunRepo) -> dict[str, Any]:
    """One line of ``kernelopt runs``: the run, its BEST, attempts and state."""
    state = repo.load_state()
    best = state.best
    return {
        "run": repo.run_id,
        "best_commit": state.best_commit if best else None,
        "best_attempt": best.attempt if best else None,
        "metric": best.note.get("metric_name") if best else None,
        "best_metric": state.best_metric,
        "attempts": len([r for r in state.attempts if r.attempt > 0]),
        "kept": len([r for r in state.attempts if r.verdict == "keep"]),
        "stopped": state.stop is not None,
        "stop_reason": state.stop.get("reason") if state.stop else None,
    }
