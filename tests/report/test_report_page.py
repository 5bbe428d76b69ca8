"""The report of a real run: every attempt on the page, valid pictures, safe HTML."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import pytest
from PIL import Image
from report_page_parse import parse_page
from report_runs import SCRIPT_HYPOTHESIS, TOY_STEPS, RecordedRun, git

from kernelopt.report import report_for_run
from kernelopt.report.build import Report


@pytest.fixture(scope="module")
def toy_report(toy_run: RecordedRun, tmp_path_factory: pytest.TempPathFactory) -> Report:
    return report_for_run(toy_run.root, toy_run.run_id, tmp_path_factory.mktemp("report"))


def assert_real_png(data: bytes) -> None:
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    assert image.width >= 600 and image.height >= 200
    colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 10  # a drawing, not a blank canvas


def test_every_attempt_appears_with_its_commit_and_verdict(
    toy_run: RecordedRun, toy_report: Report
) -> None:
    state = toy_run.state()
    assert len(state.attempts) == len(TOY_STEPS) + 1
    html = toy_report.index.read_text()
    facts = parse_page(html)
    for record in state.attempts:
        assert record.commit in facts.titles, record.attempt
        assert record.commit[:10] in facts.text
    verdicts = {"baseline", *(expected for _, _, expected in TOY_STEPS)}
    for verdict in verdicts:
        assert verdict in facts.text, verdict
    assert "bench crashed: out of memory" in facts.joined_text
    assert "skip the boundary" in facts.text


def test_pngs_exist_and_are_real_pictures(toy_report: Report) -> None:
    names = sorted(p.name for p in toy_report.files)
    assert names == ["classes.png", "counters.png", "gains.png", "index.html", "metric.png"]
    for path in toy_report.files:
        assert path.parent == toy_report.out
        if path.suffix == ".png":
            assert path.stat().st_size > 5_000, path
            assert_real_png(path.read_bytes())


def test_page_needs_no_network_and_images_resolve_beside_it(toy_report: Report) -> None:
    facts = parse_page(toy_report.index.read_text())
    assert facts.tags[:1] == ["html"] and "style" in facts.tags
    assert "script" not in facts.tags and "link" not in facts.tags
    assert facts.resources, "the page shows its plots"
    for ref in facts.resources:
        assert not ref.startswith(("http:", "https:", "//")), ref
    for src in facts.images:
        assert (toy_report.out / src).resolve().parent == toy_report.out
        assert (toy_report.out / src).is_file()


def test_user_text_is_escaped_everywhere(toy_report: Report) -> None:
    html = toy_report.index.read_text()
    assert "<script>" not in html
    assert "fuse halos &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    # read back, the escaped text is exactly what the user wrote
    assert SCRIPT_HYPOTHESIS in parse_page(html).text


def test_kept_changes_classes_and_stop_summary_carry_the_numbers(toy_report: Report) -> None:
    facts = parse_page(toy_report.index.read_text())
    text = facts.text
    # two keeps: 100/200 -> 80/160 (mean 150 -> 120, +20%), then -> 70/140 (+12.5%)
    assert "+20.00%" in text and "+12.50%" in text
    assert "+30.00%" in text  # BEST vs baseline: 105 vs 150
    html = toy_report.index.read_text()
    assert '<span class="good">+12.50%</span>' in html
    assert "+0.24%" in text and '<span class="good">+0.24%' not in html  # a tie is not a win
    class_rows = _rows_after(text, "class")
    assert class_rows[:8] == ["n=64", "100", "70", "+30.00%", "n=128", "200", "140", "+30.00%"]
    assert "Stop Summary" in text
    assert any("2 consecutive" in t for t in text), text
    assert "column order, wider" in text


def test_best_is_named_by_the_best_ref_and_attempts_exclude_the_baseline(
    toy_run: RecordedRun, toy_report: Report
) -> None:
    ledger = git(toy_run.root, "rev-parse", "refs/kernelopt/toy-t/best").strip()
    html = toy_report.index.read_text()
    best = re.search(
        r"<b>BEST:</b> <code class=\"sha\" title=\"([0-9a-f]{40})\">([0-9a-f]+)</code>", html
    )
    assert best and best.groups() == (ledger, ledger[:10])
    assert "(attempt #2)" in html[best.end() : best.end() + 40]
    # ATTEMPTS counts candidates, not the baseline.
    candidates = len(toy_run.state().attempts) - 1
    assert f'<div class="k">attempts</div><div class="v ">{candidates}</div>' in html


def _rows_after(text: list[str], header: str) -> list[str]:
    start = text.index(header)
    return [t for t in text[start + 4 :]]


def test_embedded_images_make_a_single_file_page(toy_run: RecordedRun, tmp_path: Path) -> None:
    report = report_for_run(toy_run.root, toy_run.run_id, tmp_path / "one", embed=True)
    facts = parse_page(report.index.read_text())
    assert len(facts.images) == 4
    for src in facts.images:
        assert src.startswith("data:image/png;base64,")
        assert_real_png(base64.b64decode(src.split(",", 1)[1]))


def test_an_nki_run_compares_the_profile_of_best_and_baseline(
    nki_run: RecordedRun, tmp_path: Path
) -> None:
    state = nki_run.state()
    report = report_for_run(nki_run.root, nki_run.run_id, tmp_path / "nki")
    assert (report.out / "profile.png") in report.files
    assert_real_png((report.out / "profile.png").read_bytes())
    facts = parse_page(report.index.read_text())
    text = facts.text
    # an open run names BEST under the cards, by the kept candidate's commit
    assert "BEST:" in text and state.best is not None and state.best.verdict == "keep"
    assert state.best.commit in facts.titles
    assert "Profile" in text and "tensor_engine_active_time_percent" in text
    base = state.baseline.measurement["profile"]["dma_active_time_percent"]
    best = state.best.measurement["profile"]["dma_active_time_percent"]
    row = text.index("dma_active_time_percent")
    assert text[row + 1 : row + 3] == [f"{base:.4g}", f"{best:.4g}"]
    assert "higher is better" in " ".join(text)


def test_every_verdict_shows_its_reason_and_the_best_it_was_compared_with(
    toy_run: RecordedRun, toy_report: Report
) -> None:
    from html import escape

    html = toy_report.index.read_text()
    state = toy_run.state()
    for record in state.attempts[1:]:
        assert record.note.get("reason"), record.attempt
        assert escape(record.note["reason"]) in html
        basis = record.note.get("basis") or {}
        if basis.get("against") == "remeasured":
            pairs = basis["pairs"]
            assert f"({pairs} pair{'s' if pairs != 1 else ''})" in html
