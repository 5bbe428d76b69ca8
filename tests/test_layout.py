"""The test tree cannot stand in for a real package.

pytest puts ``tests/`` on ``sys.path``, so a folder there named like a package
the code imports (``tests/ray``) is importable as that package when the real
one is missing, and ``pytest.importorskip`` then runs tests it should skip.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_top_level_names() -> set[str]:
    names: set[str] = set()
    for path in [*(ROOT / "kernelopt").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(str(node.args[0].value).split(".")[0])
    return names


def test_no_test_folder_is_named_like_an_imported_package() -> None:
    tests = ROOT / "tests"
    # Folders of test suites (no __init__.py); a helper package of ours has one.
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not (p / "__init__.py").exists()}
    modules = {p.stem for p in tests.rglob("*.py")}
    external = (imported_top_level_names() - {"kernelopt"} - modules) | set(sys.stdlib_module_names)
    assert not folders & external, f"rename these test folders: {sorted(folders & external)}"
