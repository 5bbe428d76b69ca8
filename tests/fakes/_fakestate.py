"""State shared by the fake device tools: a JSON file named by KERNELOPT_FAKE_STATE."""

from __future__ import annotations

import json
import os
import sys
import time
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
    """Append this invocation to the call log the fake Trn2 tools write too
    (kernelopt.testing.fake_trn2.config), so tests see every call in order."""
    entry = {"tool": name, "args": sys.argv[1:], "t": time.time(), "env": {}}
    with open(state_dir() / "calls.jsonl", "a") as log:
        log.write(json.dumps(entry) + "\n")
