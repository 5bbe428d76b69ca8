"""performance.md: the kept-results table and Stop Summaries.

The ledger is generated from the run's records and appended to; it is never
read back as the truth (the notes are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEADER = """# Performance

Kept results of kernelopt runs: baselines and real improvements only. Every
attempt, kept or not, is in `kernelopt log` and in the git notes
(`git notes --ref kernelopt show <commit>`).
"""

COLUMNS = ("date", "commit", "status", "target", "class", "kernel", "metric", "change", "why")


@dataclass(frozen=True)
class LedgerRow:
    date: str
    commit: str
    status: str  # baseline | keep | reference
    target: str
    config_class: str
    kernel: str
    metric: str
    change: str
    why: str


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def format_metric(name: str, value: float | None, device: str = "") -> str:
    if value is None:
        return "n/a"
    label = f" ({device})" if device == "sim" else ""
    return f"{name} {value:.4g}{label}"


def format_change(gain: float | None) -> str:
    return "—" if gain is None else f"{gain * 100:+.2f}%"


def run_section(run_id: str, program: str, device: str, started: str) -> str:
    head = "| " + " | ".join(COLUMNS) + " |\n" + "|" + "---|" * len(COLUMNS) + "\n"
    return (
        f"\n## Run {run_id}\n\nProgram `{program}`, device `{device}`, started {started}.\n\n{head}"
    )


def render_row(row: LedgerRow) -> str:
    cells = (
        row.date,
        f"`{row.commit[:10]}`",
        row.status,
        f"`{row.target}`",
        row.config_class,
        row.kernel,
        row.metric,
        row.change,
        row.why,
    )
    return "| " + " | ".join(_cell(c) for c in cells) + " |\n"


def render_stop_summary(
    run_id: str,
    time: str,
    reason: str,
    best_commit: str,
    best_metrics: Mapping[str, Any],
    regressions: Sequence[Mapping[str, Any]],
) -> str:
    lines = [
        "",
        f"### Stop Summary — {run_id}",
        "",
        f"- time: {time}",
        f"- reason: {reason}",
        f"- BEST_COMMIT: `{best_commit[:10]}`",
        "- best metrics: "
        + (", ".join(f"{k} {_fmt(v)}" for k, v in best_metrics.items()) or "n/a"),
        "",
    ]
    if regressions:
        lines += [
            "| attempt | hypothesis | changed files | metric best -> candidate | delta | notes |",
            "|---|---|---|---|---|---|",
        ]
        for r in regressions:
            cells = (
                r.get("attempt", ""),
                r.get("hypothesis", ""),
                ", ".join(r.get("files", [])),
                f"{_fmt(r.get('best'))} -> {_fmt(r.get('candidate'))}",
                format_change(r.get("gain")),
                r.get("notes", ""),
            )
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)


def append(path: Path, text: str) -> None:
    """Append ``text``, creating the file with its header first when needed."""
    if not path.exists() or not path.read_text().strip():
        path.write_text(HEADER)
    existing = path.read_text()
    with path.open("a") as fh:
        if not existing.endswith("\n"):
            fh.write("\n")
        fh.write(text)
