"""The tuning story of one run as a page, pictures and a terminal table.

The names below load their module on first use: report.build pulls in pandas
and matplotlib, which `kernelopt log` and `kernelopt status` never need.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "Report": "kernelopt.report.build",
    "report_for_run": "kernelopt.report.build",
    "write_report": "kernelopt.report.build",
    "RunFrames": "kernelopt.report.frames",
    "run_frames": "kernelopt.report.frames",
    "render_log_table": "kernelopt.report.table",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
