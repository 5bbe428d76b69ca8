"""performance.md: the kept-results table and Stop Summaries.

The ledger is generated from the run's records and appended to; it is never
read back as the truth (the notes are).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelopt.decide import Verdict, gain
from kernelopt.hypothesis import cut_words
from kernelopt.note import describe_basis

HEADER = """# Performance

Kept results of kernelopt runs: baselines and real improvements only. Every
attempt, kept or not, is in `kernelopt log` and in the git notes
(`git notes --ref kernelopt show <commit>`). A row names the commit that was
measured; BEST is the run branch's commit that records it here
(`refs/kernelopt/<run>/best`, the BEST_COMMIT of `kernelopt status`).
"""

# "measured commit" is the attempt that was measured; BEST is named by the run
# branch's commit that records it here (the best ref), as the Stop Summary says.
COLUMNS = (
    "date",
    "measured commit",
    "status",
    "target",
    "class",
    "kernel",
    "metric",
    "change",
    "why",
)


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


def format_change(gain: float | None, basis: Mapping[str, Any] | None = None) -> str:
    """``+4.20% vs BEST re-measured beside it (6 pairs)``: the gain and what it is against."""
    if gain is None:
        return "—"
    against = describe_basis(basis)
    return f"{gain * 100:+.2f}% {against}" if against else f"{gain * 100:+.2f}%"


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
        f"- BEST_COMMIT: `{best_commit[:10]}` (the run branch's commit at BEST; the commit "
        "adding this summary goes on top of it with the same tree, and the best ref and "
        "`kernelopt status` name that one from now on)",
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


@dataclass(frozen=True)
class Labels:
    """How a run's rows name it: the run, program, target, kernel and metric."""

    run_id: str
    program: str
    target: str
    kernel: str
    metric: str
    better: str


def kept_rows(note: Mapping[str, Any], sha: str, labels: Labels) -> str:
    """The text a kept attempt adds: its row, and for a baseline the run's section and
    the compiler's reference row beside it."""
    baseline = note["verdict"] == Verdict.BASELINE
    device = str(note.get("device"))
    text = ""
    if baseline:
        text += run_section(labels.run_id, labels.program, device, str(note.get("time")))
    improved = note.get("improved") or []
    row = LedgerRow(
        date=str(note.get("time", ""))[:10],
        commit=sha,
        status="baseline" if baseline else "keep",
        target=labels.target,
        config_class=", ".join(improved) if improved else "all",
        kernel=labels.kernel,
        metric=format_metric(labels.metric, note.get("metric"), device),
        change=format_change(note.get("gain"), note.get("basis")),
        why=str(note.get("hypothesis", "")),
    )
    text += render_row(row)
    reference = note.get("reference")
    if baseline and reference:
        value = reference.get("metric")
        change = None
        if value not in (None, 0) and note.get("metric") is not None:
            change = gain(note["metric"], value, labels.better)
        text += render_row(
            LedgerRow(
                date=row.date,
                commit=sha,
                status="reference",
                target=str(reference.get("what", "compiler baseline")),
                config_class="all",
                kernel=labels.kernel,
                metric=(
                    format_metric(labels.metric, value, device)
                    if value is not None
                    else "skipped"
                    if reference.get("skipped")
                    else "n/a"
                ),
                change=format_change(change),
                why=str(reference.get("why", "")),
            )
        )
    return text


def kept_message(n: int, sha: str, note: Mapping[str, Any], labels: Labels) -> tuple[str, str]:
    """Subject and body of the ledger commit that keeps attempt ``n``."""
    if note["verdict"] == Verdict.BASELINE:
        measured = format_metric(labels.metric, note.get("metric"), str(note.get("device")))
        subject = f"kernelopt: baseline {measured}"
    else:
        change = format_change(note.get("gain"))
        why = cut_words(str(note.get("hypothesis", "")).strip().split("\n")[0], 80)
        subject = f"kernelopt: keep #{n} ({change} {labels.metric}): {why}"
    against = describe_basis(note.get("basis")) or "as the run's first measurement"
    body = (
        f"Attempt #{n} ({sha[:10]}) measured {labels.metric} {_fmt(note.get('metric'))} "
        f"{against}; BEST's figure {_fmt(note.get('previous_best'))} -> "
        f"{_fmt(note.get('best_metric'))}."
    )
    if note.get("reason"):
        body += f"\n\nWhy: {note['reason']}"
    return subject, body


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
