"""The fake NEFF and NTFF files: JSON standing in for the binary formats.

A fake NEFF holds what the fake compiler saw (the kernel's source, inputs,
outputs, options) and the fake device's profile of it, so the fake runtime
and profiler can answer from it; a fake NTFF holds one traced execution.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

NEFF_FORMAT = "kernelopt-fake-neff-1"
NTFF_FORMAT = "kernelopt-fake-ntff-1"


class FakeFileError(ValueError):
    pass


def write(path: Path, fmt: str, body: dict[str, Any]) -> None:
    path.write_text(json.dumps({"format": fmt, **body}))


def read(path: str | Path, fmt: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise FakeFileError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise FakeFileError(f"{path}: not a file the fake Trn2 toolchain wrote") from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise FakeFileError(f"{path}: expected a {fmt} file")
    return data
