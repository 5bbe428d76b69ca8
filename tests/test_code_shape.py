"""The package keeps the shape a newcomer can read: no file, function or class
past its limit, the loop only the loop, one Target protocol."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kernelopt"
LIMITS = {"file": 500, "function": 80, "class": 350}


def _too_long() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        where = path.relative_to(PACKAGE.parent)
        if (lines := len(text.splitlines())) > LIMITS["file"]:
            found.append(f"{where}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            kind = (
                "function"
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                else "class"
                if isinstance(node, ast.ClassDef)
                else None
            )
            if kind and (size := node.end_lineno - node.lineno + 1) > LIMITS[kind]:
                found.append(f"{where}:{node.name}: {kind} of {size} lines")
    return found


def test_no_file_function_or_class_past_its_limit() -> None:
    assert _too_long() == []


def test_the_loop_is_only_the_loop() -> None:
    assert len((PACKAGE / "loop.py").read_text().splitlines()) <= 300


def test_one_class_named_target() -> None:
    named = [
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "Target"
    ]
    assert named == ["kernelopt/targets/base.py"]
