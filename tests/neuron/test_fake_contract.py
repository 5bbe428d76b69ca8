"""The fakes follow the documentation table, not kernelopt: every row of the
"Fake contract" table in docs/trn2.md is checked against the fake it names.

Python entry points are inspected in a child process inside the fake's own
environment (they are never importable in the test process); tools are run.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelopt.testing.fake_trn2 import TOOLS, FakeTrn2

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "trn2.md"
STEPS = ROOT / "kernelopt" / "neuron" / "steps"
SDK_PACKAGES = ("nki", "nrtpy", "neuronxcc", "nkipy", "neuronpy")
KERNELS = Path(__file__).resolve().parent / "kernels"

# Which fake environment holds each kind of Python entry point.
ENVIRONMENTS = {"runtime": ("current", True), "current": ("current", False)}
ENVIRONMENTS.update({"older": ("older", False), "baseline": ("current", False)})
ENVIRONMENTS.update({"2.30": ("2.30", False), "predecessor": ("2.22", False)})


def table(heading: str, width: int) -> list[list[str]]:
    """The rows (cells) of the first table under ``heading`` in docs/trn2.md."""
    text = DOC.read_text()
    section = text[text.index(heading) :]
    rows, started = [], False
    for line in section.splitlines():
        if not line.startswith("|"):
            if started:
                break
            continue
        started = True
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == width, f"{heading}: {line}"
        if set(cells[0]) <= {"-"} or cells[0] in ("fake", "step"):
            continue
        rows.append(cells)
    return rows


def contract() -> list[dict[str, str]]:
    rows = []
    for cells in table("### Fake contract", 5):
        fake, entry, signature, keys, page = cells
        rows.append(
            {
                "fake": fake,
                "entry": entry.strip("`"),
                "signature": signature.strip("`"),
                "keys": keys.strip("`"),
                "page": page,
            }
        )
    return rows


ROWS = contract()
PYTHON_ROWS = [r for r in ROWS if r["fake"] != "tool"]
TOOL_ROWS = [r for r in ROWS if r["fake"] == "tool"]

# Runs in the fake environment: the plain signature (no annotations) and the
# named attributes of each requested entry point.
INSPECT = r"""
import dataclasses, importlib, inspect, json, sys

def resolve(dotted):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj, importlib.import_module(".".join(parts[:i]))
    raise ImportError(dotted)

def value(default):
    if default is None or isinstance(default, (bool, int, float, str)):
        return repr(default)
    return "..."

def plain(obj, unbound):
    words, star = [], False
    params = list(inspect.signature(obj).parameters.values())
    if unbound and params and params[0].name in ("self", "cls"):
        params = params[1:]
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            words.append("*" + p.name); star = True; continue
        if p.kind == p.VAR_KEYWORD:
            words.append("**" + p.name); continue
        if p.kind == p.KEYWORD_ONLY and not star:
            words.append("*"); star = True
        words.append(p.name if p.default is p.empty else f"{p.name}={value(p.default)}")
    return "(" + ", ".join(words) + ")"

def attributes(cls):
    found = set(dir(cls))
    if dataclasses.is_dataclass(cls):
        found |= {f.name for f in dataclasses.fields(cls)}
    try:
        found |= set(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        pass
    return found

out = {}
for row in json.loads(sys.argv[1]):
    obj, module = resolve(row["entry"])
    owner = row["entry"].rsplit(".", 1)[0]
    unbound = inspect.isfunction(obj) and "." in row["entry"][len(module.__name__) + 1:]
    called = row["signature"] != "(not called)"
    result = {"signature": plain(obj, unbound) if called else row["signature"], "missing": []}
    if row["keys"]:
        cls_name, _, names = row["keys"].partition(":")
        cls = getattr(module, cls_name.strip())
        result["missing"] = [n.strip() for n in names.split(",") if n.strip() not in attributes(cls)]
    out[row["entry"]] = result
print(json.dumps(out))
"""


def test_the_table_covers_every_fake_sdk_package_and_tool() -> None:
    entries = {r["entry"] for r in ROWS}
    for needed in (
        "nrtpy.NrtpyModel.benchmark",
        "nki.compiler.driver.compile_bir_to_neff",
        "neuronxcc.nki_standalone.compile_nki_ir_kernel_to_neff",
        "nkipy.core.compile.compile_to_neff",
        "neuron-explorer view",
        "neuron-profile capture",
        "neuron-ls",
        "neuron-monitor",
        "neuronx-cc",
    ):
        assert needed in entries, needed
    assert all(r["page"] for r in ROWS), "every row names its documentation page"


def test_every_sdk_name_kernelopt_imports_has_a_row() -> None:
    """The table is what kernelopt relies on: a name the steps import from the SDK
    without a row would be an API no fake is checked against."""
    entries = {r["entry"] for r in PYTHON_ROWS}
    imported = set()
    for path in sorted(STEPS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.split(".")[0] in SDK_PACKAGES:
                    imported |= {f"{node.module}.{alias.name}" for alias in node.names}
    assert len(imported) >= 8, imported
    for name in sorted(imported):
        assert any(e == name or e.startswith(name + ".") for e in entries), name


def test_every_fake_tool_has_a_row() -> None:
    rows = {r["entry"].split()[0] for r in TOOL_ROWS}
    assert set(TOOLS) <= rows, sorted(set(TOOLS) - rows)


def test_every_step_of_the_sdk_path_names_its_page_and_whether_it_was_verified() -> None:
    steps = table("## The SDK path, step by step", 5)
    names = {cells[0] for cells in steps}
    for needed in ("compile (current)", "compile (older)", "device time", "profile", "MFU"):
        assert needed in names, needed
    assert {"run and check", "compiler baseline", "probe", "busy cores"} <= names
    for step, api, page, _reads, status in steps:
        assert api and page, step
        assert "verified" in status, f"{step}: say whether it was verified ({status!r})"
    unverified = [cells[0] for cells in steps if "unverified" in cells[4]]
    assert "compile (current)" in unverified and "compiler baseline" in unverified


@pytest.fixture
def fakes(tmp_path: Path) -> dict[str, FakeTrn2]:
    return {
        "current": FakeTrn2(tmp_path / "current").install(sdk="current"),
        "older": FakeTrn2(tmp_path / "older").install(sdk="older"),
        "2.30": FakeTrn2(tmp_path / "2.30").install(sdk="2.30"),
        "2.22": FakeTrn2(tmp_path / "2.22").install(sdk="2.22"),
    }


@pytest.mark.parametrize("kind", sorted({r["fake"] for r in PYTHON_ROWS}))
def test_python_entry_points_have_the_documented_signatures_and_keys(
    kind: str, fakes: dict[str, FakeTrn2]
) -> None:
    style, runtime = ENVIRONMENTS[kind]
    rows = [r for r in PYTHON_ROWS if r["fake"] == kind]
    env = {**os.environ, **fakes[style].env(runtime=runtime)}
    done = subprocess.run(
        [sys.executable, "-c", INSPECT, json.dumps(rows)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    for row in rows:
        assert found[row["entry"]]["signature"] == row["signature"], row["entry"]
        assert found[row["entry"]]["missing"] == [], row["entry"]


def _tool(fake: FakeTrn2, *argv: str, cwd: Path, bound: bool = False) -> Any:
    extra = {"NEURON_RT_VISIBLE_CORES": "0"} if bound else {}
    env = {**os.environ, **fake.env(), **extra}
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, cwd=cwd, timeout=60)


def _neff(fake: FakeTrn2, folder: Path) -> Path:
    kernel = KERNELS / "kernel.py"
    ir = {
        "kind": "nki",
        "kernel": str(kernel),
        "source": kernel.read_text(),
        "func": None,
        "inputs": {"lhsT": [[256, 128], "bfloat16"], "rhs": [[256, 512], "bfloat16"]},
        "outputs": [[[128, 512], "bfloat16", "output"]],
        "api": "contract",
    }
    (folder / "k.json").write_text(json.dumps(ir))
    row = next(r for r in TOOL_ROWS if r["entry"] == "neuronx-cc")
    argv = row["signature"].replace("INPUT", "k.json").replace("NEFF", "k.neff").split()
    done = _tool(fake, "neuronx-cc", *argv, cwd=folder)
    assert done.returncode == 0, done.stderr
    for key in row["keys"].split(","):
        assert (folder / key.strip()).exists(), key
    return folder / "k.neff"


@pytest.mark.parametrize("row", TOOL_ROWS, ids=[r["entry"] for r in TOOL_ROWS])
def test_tools_take_the_documented_commands_and_print_the_documented_keys(
    row: dict[str, str], fakes: dict[str, FakeTrn2], tmp_path: Path
) -> None:
    tool, _, command = row["entry"].partition(" ")
    fake = fakes["older" if tool == "neuron-profile" else "current"]
    keys = [k.strip() for k in row["keys"].split(",")]
    if tool == "neuronx-cc":
        _neff(fake, tmp_path)
        return
    if tool == "neuron-ls":
        done = _tool(fake, tool, *row["signature"].split(), cwd=tmp_path)
        listing = json.loads(done.stdout)
        devices = listing if isinstance(listing, list) else listing["neuron_devices"]
        assert sorted(devices[0]) == sorted(keys)
        return
    if tool == "neuron-monitor":
        env = {**os.environ, **fake.env()}
        process = subprocess.Popen([tool], env=env, stdout=subprocess.PIPE, text=True)
        try:
            assert process.stdout is not None
            document = json.loads(process.stdout.readline())
        finally:
            process.kill()
            process.wait()
        assert sorted(document) == sorted(keys)
        return
    neff = _neff(fake, tmp_path)
    if command == "capture --save-output":
        args = row["signature"].replace("NEFF", str(neff)).split()
        done = _tool(fake, tool, *args, cwd=tmp_path, bound=True)
        assert done.returncode == 0, done.stderr
        pattern = re.escape(row["keys"]).replace("NAME", '([^"]+)').replace("FILE", '([^"]+)')
        ((name, file),) = re.findall(pattern, done.stdout)
        assert name == "output" and (tmp_path / file).stat().st_size == 128 * 512 * 2
        return
    capture = next(r for r in TOOL_ROWS if r["entry"] == f"{tool} capture")
    argv = capture["signature"].replace("NEFF", str(neff)).replace("NTFF", "p.ntff").split()
    assert _tool(fake, tool, *argv, cwd=tmp_path, bound=True).returncode == 0
    written = tmp_path / capture["keys"].replace("NTFF", "p")
    assert written.exists()
    if command == "capture":
        return
    args = row["signature"].replace("NEFF", str(neff)).replace("NTFF", str(written)).split()
    done = _tool(fake, tool, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (summary,) = json.loads(done.stdout).values()
    assert sorted(summary) == sorted(keys)


def test_the_summary_keys_are_the_ones_kernelopt_documents_reading() -> None:
    view = next(r for r in TOOL_ROWS if r["entry"] == "neuron-explorer view")
    documented = {k.strip() for k in view["keys"].split(",")}
    text = DOC.read_text()
    for name in ("total_time", "mfu_estimated_percent", "mbu_estimated_percent", "nc_idx"):
        assert name in documented and f"`{name}`" in text
    assert re.search(r"\| MFU \|", text)


def test_every_fake_sdk_module_names_its_public_source_or_says_unverified() -> None:
    """A fake module with public entry points says where their behaviour comes from."""
    pylib = ROOT / "kernelopt" / "testing" / "fake_trn2" / "pylib"
    checked = 0
    for folder in ("current", "older", "baseline", "predecessor"):
        for path in sorted((pylib / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            public = [
                n.name
                for n in tree.body
                if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("_")
            ]
            if not public:
                continue
            checked += 1
            doc = ast.get_docstring(tree) or ""
            assert re.search(r"[Ss]ource|unverified|release notes", doc), path
            assert "kernelopt/neuron" not in doc, f"{path}: a fake follows the SDK, not kernelopt"
    assert checked >= 10
