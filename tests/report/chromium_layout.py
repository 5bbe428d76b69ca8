"""Headless Chromium for the report tests: a screenshot, and the layout as the browser measured it.

The layout check adds a small script to a copy of the page (the report itself
has none): after layout it records, for every table cell, how many lines its
text takes and whether its content overflows, and writes that as JSON into
the DOM, which ``--dump-dom`` prints.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None
)
WIDTH = 1400

MEASURE = """
<script>
(() => {
  // Lines a cell's text takes: distinct tops of its text boxes, half a line apart.
  const lines = (el) => {
    const tops = [];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (!n.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) if (r.width > 0) tops.push(r.top);
    }
    tops.sort((a, b) => a - b);
    let count = 0, last = -1e9;
    for (const t of tops) if (t - last > 8) { count += 1; last = t; }
    return count;
  };
  const out = {viewport: document.documentElement.clientWidth, tables: []};
  for (const table of document.querySelectorAll("table")) {
    const box = table.getBoundingClientRect();
    const holder = table.parentElement;
    const cells = [...table.querySelectorAll("th, td")].map((cell) => {
      const code = cell.querySelector("code[title]");
      return {
        tag: cell.tagName.toLowerCase(),
        text: cell.innerText.trim(),
        lines: lines(cell),
        overflows: cell.scrollWidth > cell.clientWidth,
        hash: code ? code.title : null,
      };
    });
    out.tables.push({
      right: box.right,
      holder_scroll: holder.scrollWidth,
      holder_client: holder.clientWidth,
      cells,
    });
  }
  const pre = document.createElement("pre");
  pre.id = "measured-layout";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""
MEASURED = re.compile(r'<pre id="measured-layout">(.*?)</pre>', re.S)


@dataclass(frozen=True)
class Cell:
    tag: str
    text: str
    lines: int
    overflows: bool
    hash: str | None


@dataclass(frozen=True)
class Table:
    right: float
    holder_scroll: int
    holder_client: int
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Layout:
    viewport: int
    tables: tuple[Table, ...]


def chromium(*args: str, profile: Path, height: int = 2000) -> str:
    assert CHROMIUM is not None
    proc = subprocess.run(
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
            f"--user-data-dir={profile}",
            f"--window-size={WIDTH},{height}",
            *args,
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=90,
    )
    return proc.stdout


def measure_layout(index: Path, profile: Path) -> Layout:
    """Load a copy of ``index`` (beside it, so its images resolve) with MEASURE added."""
    probe = index.with_name("layout-probe.html")
    probe.write_text(index.read_text().replace("</body>", MEASURE + "</body>"))
    try:
        dom = chromium("--dump-dom", probe.as_uri(), profile=profile)
    finally:
        probe.unlink()
    found = MEASURED.search(dom)
    assert found, "the layout script did not run"
    data: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return Layout(
        viewport=int(data["viewport"]),
        tables=tuple(
            Table(
                right=float(t["right"]),
                holder_scroll=int(t["holder_scroll"]),
                holder_client=int(t["holder_client"]),
                cells=tuple(Cell(**c) for c in t["cells"]),
            )
            for t in data["tables"]
        ),
    )
