"""The page as a browser draws it: headless Chromium, offline, one screenshot."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from report_runs import RecordedRun

from kernelopt.report import report_for_run

CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_headless_chromium_renders_the_page(toy_run: RecordedRun, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    report = report_for_run(toy_run.root, toy_run.run_id, tmp_path / "report")
    shot = tmp_path / "page.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,1600",
            report.index.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert shot.is_file()
    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 1600)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "the screenshot is blank"
    # the plots were loaded from beside the page: the running-best green is on screen
    assert any(_near(c, (0x16, 0xA3, 0x4A)) for _, c in colours)


def _near(colour: tuple[int, int, int], target: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 12 for a, b in zip(colour, target, strict=True))
