"""The page as a browser draws it at 1,400 px: headless Chromium, offline.

One test keeps a screenshot (in the test's temporary folder) and checks the
plots were drawn; the other measures the layout inside Chromium: no header
and no commit hash breaks over lines, no cell overflows, no table is wider
than the window.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chromium_layout import CHROMIUM, WIDTH, chromium, measure_layout
from PIL import Image
from report_runs import RecordedRun

from kernelopt.report import report_for_run

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)
SHA = re.compile(r"[0-9a-f]{40}")


@needs_chromium
def test_headless_chromium_renders_the_page(toy_run: RecordedRun, tmp_path: Path) -> None:
    report = report_for_run(toy_run.root, toy_run.run_id, tmp_path / "report")
    shot = tmp_path / "page.png"
    chromium(f"--screenshot={shot}", report.index.as_uri(), profile=tmp_path / "profile")
    assert shot.is_file()
    image = Image.open(shot).convert("RGB")
    assert image.size == (WIDTH, 2000)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "the screenshot is blank"
    # the plots were loaded from beside the page: the running-best green is on screen
    assert any(_near(c, (0x16, 0xA3, 0x4A)) for _, c in colours)


def _near(colour: tuple[int, int, int], target: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 12 for a, b in zip(colour, target, strict=True))


@needs_chromium
@pytest.mark.parametrize("run", ["toy_run", "nki_run"])
def test_tables_fit_their_columns_at_1400_px(
    run: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    recorded: RecordedRun = request.getfixturevalue(run)
    report = report_for_run(recorded.root, recorded.run_id, tmp_path / "report")
    layout = measure_layout(report.index, tmp_path / "profile")
    assert WIDTH - 30 <= layout.viewport <= WIDTH, "the window is 1,400 px wide"
    assert layout.tables, "the page has tables"
    hashes = [c for t in layout.tables for c in t.cells if c.hash]
    state = recorded.state()
    assert {c.hash for c in hashes} >= {r.commit for r in state.attempts}
    for cell in hashes:
        assert SHA.fullmatch(cell.hash or "") and cell.text == (cell.hash or "")[:10]
        assert cell.lines == 1, f"hash {cell.text} wraps over {cell.lines} lines"
    headers = [c for t in layout.tables for c in t.cells if c.tag == "th"]
    for cell in headers:
        assert cell.lines == 1, f"header {cell.text!r} wraps over {cell.lines} lines"
    badges = [c for t in layout.tables for c in t.cells if c.text in {"regression", "baseline"}]
    assert badges and all(c.lines == 1 for c in badges), badges
    for table in layout.tables:
        assert table.right <= layout.viewport, "a table runs past the window"
        assert table.holder_scroll <= table.holder_client, "a table needs scrolling at 1,400 px"
        for cell in table.cells:
            assert not cell.overflows, f"cell {cell.text!r} overflows its column"
