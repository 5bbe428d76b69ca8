"""The tuning story of one run as a page, pictures and a terminal table."""

from kernelopt.report.build import Report, report_for_run, write_report
from kernelopt.report.frames import RunFrames, run_frames
from kernelopt.report.table import render_log_table

__all__ = [
    "Report",
    "RunFrames",
    "render_log_table",
    "report_for_run",
    "run_frames",
    "write_report",
]
