#!/usr/bin/env python3
"""A deterministic stand-in for a coding agent, driven by a plan file.

Each invocation takes the next step of the plan (JSON list in the file named
by SCRIPTED_AGENT_PLAN), applies its edits in the current directory, writes
its hypothesis to KERNELOPT_HYPOTHESIS_FILE, appends what it was asked to
SCRIPTED_AGENT_LOG, and exits with the step's status (or sleeps past its
timeout).
"""

import json
import os
import sys
import time
from pathlib import Path

plan = json.loads(Path(os.environ["SCRIPTED_AGENT_PLAN"]).read_text())
counter = Path(os.environ["SCRIPTED_AGENT_PLAN"] + ".next")
index = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(index + 1))
step = plan[index] if index < len(plan) else {"exit": 3}

context = json.loads(Path(os.environ["KERNELOPT_CONTEXT_JSON"]).read_text())
markdown = Path(os.environ["KERNELOPT_CONTEXT"]).read_text()
with open(os.environ["SCRIPTED_AGENT_LOG"], "a") as log:
    log.write(
        json.dumps(
            {
                "step": index,
                "ask": context["ask"],
                "has_lessons": "Lessons" in markdown,
                "best": context["best"]["metric"],
            }
        )
        + "\n"
    )

for path, text in step.get("edit", {}).items():
    Path(path).write_text(text)
if "hypothesis" in step:
    Path(os.environ["KERNELOPT_HYPOTHESIS_FILE"]).write_text(step["hypothesis"] + "\n")
if step.get("sleep"):
    time.sleep(step["sleep"])
sys.exit(step.get("exit", 0))
