"""State shared by the fake device tools: a JSON file named by KERNELOPT_FAKE_STATE."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def load(section: str) -> dict[str, Any]:
    path = os.environ.get("KERNELOPT_FAKE_STATE")
    if not path:
        sys.exit("fake tool: KERNELOPT_FAKE_STATE is not set")
    data = json.loads(Path(path).read_text())
    return dict(data.get(section, {}))


def state_dir() -> Path:
    return Path(os.environ["KERNELOPT_FAKE_STATE"]).parent


def record_call(name: str) -> None:
    """Append this invocation to calls.log so tests can see which commands ran."""
    with open(state_dir() / "calls.log", "a") as log:
        log.write(" ".join([name, *sys.argv[1:]]) + "\n")
