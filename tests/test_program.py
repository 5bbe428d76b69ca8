"""program.md: every problem at once with its key path, clean errors for any input."""

from __future__ import annotations

import copy
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from benchmarks_support.gitrepo import Cli, make_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelopt.program import Program, ProgramError, load_program
from kernelopt.targets import command_target

VALID: dict[str, Any] = {
    "kernelopt": 1,
    "name": "blur",
    "target": {
        "kind": "command",
        "command": "python bench.py",
        "results": {"format": "csv", "path": "results/out.csv"},
        "correct": "err == 0",
        "config_columns": ["n"],
        "knobs": {"file": "knobs.json", "space": {"BLOCK": [32, 64]}},
    },
    "metric": {"name": "time_us", "better": "lower"},
    "device": {"kind": "none", "poll": "30s", "max_wait": "1h"},
    "decide": {"noise": "2%", "confirm": 3, "max_consecutive_regressions": 4},
    "stop": {"max_candidates": 10, "max_hours": 1.5},
    "timeout": "90s",
}


def write(root: Path, front: Any, body: str = "# Brief\n\nDo the thing.\n") -> Path:
    path = root / "programs" / "p.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\n" + yaml.safe_dump(front, sort_keys=False) + "---\n" + body)
    return path


def problems(path: Path, root: Path | None = None) -> dict[str, str]:
    with pytest.raises(ProgramError) as info:
        load_program(path, root=root)
    return {p.path: p.message for p in info.value.problems}


def test_valid_program_is_parsed_with_defaults(tmp_path: Path) -> None:
    program = load_program(write(tmp_path, VALID), root=tmp_path)

    assert program.name == "blur"
    assert program.target.results_format == "csv"
    assert program.target.config_columns == ("n",)
    assert program.target.knobs is not None
    assert program.target.knobs.space == {"BLOCK": (32, 64)}
    assert program.decide.noise == pytest.approx(0.02)
    assert program.decide.confirm == 3
    assert program.decide.recent_window == 5  # default
    assert program.device.poll_s == 30 and program.device.max_wait_s == 3600
    assert program.timeout_s == 90
    assert program.stop.max_hours == 1.5
    assert program.body == "# Brief\n\nDo the thing.\n"


def test_every_schema_problem_is_reported_at_once(tmp_path: Path) -> None:
    front = copy.deepcopy(VALID)
    del front["metric"]["better"]
    front["colour"] = "blue"
    front["decide"]["confirm"] = "three"
    front["decide"]["noise"] = "lots"
    front["timeout"] = "ten minutes"
    front["device"]["hosts"] = "gym-3"

    found = problems(write(tmp_path, front), tmp_path)

    assert set(found) == {
        "metric.better",
        "colour",
        "decide.confirm",
        "decide.noise",
        "timeout",
        "device.hosts",
    }
    assert "missing" in found["metric.better"]
    assert "allowed:" in found["colour"] and "target" in found["colour"]
    assert "expected int" in found["decide.confirm"] and "'three'" in found["decide.confirm"]
    assert "percentage" in found["decide.noise"]
    assert "ten minutes" in found["timeout"]
    assert "list[str]" in found["device.hosts"]


def test_missing_required_section_and_bad_choice(tmp_path: Path) -> None:
    front = copy.deepcopy(VALID)
    del front["target"]
    front["metric"]["better"] = "faster"

    found = problems(write(tmp_path, front), tmp_path)

    assert "missing section" in found["target"]
    assert "higher" in found["metric.better"] and "'faster'" in found["metric.better"]


def test_missing_files_are_named_with_their_key(tmp_path: Path) -> None:
    front = copy.deepcopy(VALID)
    front["target"] = {
        "kind": "nki",
        "workload": "ir/mm/workload.py",
        "kernel": "ir/mm/kernel.py",
    }
    front["metric"] = {"name": "mfu", "better": "higher"}

    found = problems(write(tmp_path, front), tmp_path)

    assert "ir/mm/workload.py" in found["target.workload"]
    assert "ir/mm/kernel.py" in found["target.kernel"]


def test_file_problems_are_reported_with_schema_problems(tmp_path: Path) -> None:
    front = copy.deepcopy(VALID)
    front["target"] = {"kind": "nki", "workload": "missing.py", "kernel": "missing_kernel.py"}
    front["metric"] = {"name": "mfu", "better": "higher"}
    front["decide"]["noise"] = "lots"

    found = problems(write(tmp_path, front), tmp_path)

    assert {"target.workload", "target.kernel", "decide.noise"} <= set(found)


def test_nki_metric_never_produced(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_text("")
    (tmp_path / "k.py").write_text("")
    front = copy.deepcopy(VALID)
    front["target"] = {"kind": "nki", "workload": "w.py", "kernel": "k.py"}
    front["metric"] = {"name": "gflops", "better": "higher"}

    found = problems(write(tmp_path, front), tmp_path)

    assert "never produces 'gflops'" in found["metric.name"]
    assert "mfu" in found["metric.name"]


def test_command_target_needs_its_command_and_results_path(tmp_path: Path) -> None:
    front = copy.deepcopy(VALID)
    del front["target"]["command"]
    del front["target"]["results"]["path"]

    found = problems(write(tmp_path, front), tmp_path)

    assert "target.command" in found
    assert "target.results.path" in found


def test_a_correctness_expression_that_does_not_parse_is_a_problem(tmp_path: Path) -> None:
    front = copy.deepcopy(VALID)
    front["target"]["correct"] = "err =="

    found = problems(write(tmp_path, front), tmp_path)

    assert "err ==" in found["target.correct"]


@pytest.mark.parametrize("timeout", [0, "0s", "nan"])
def test_a_timeout_must_be_a_positive_duration(tmp_path: Path, timeout: Any) -> None:
    front = {**copy.deepcopy(VALID), "timeout": timeout}

    assert "timeout" in problems(write(tmp_path, front), tmp_path)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("no front matter here\n", ""),
        ("---\nname: [unclosed\n---\n", "line"),
        ("---\n- a list\n---\n", ""),
    ],
)
def test_unreadable_front_matter(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "p.md"
    path.write_text(text)

    found = problems(path, tmp_path)

    assert len(found) == 1
    assert next(iter(found)).startswith(where)


def test_missing_program_file(tmp_path: Path) -> None:
    assert problems(tmp_path / "nope.md") == {"": "program file does not exist"}


def test_cli_reports_every_problem_with_exit_code_2_and_no_traceback(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "repo")
    front = copy.deepcopy(VALID)
    front["colour"] = "blue"
    front["decide"]["confirm"] = -1
    path = write(root, front)

    proc = subprocess.run(
        ["kernelopt", "run", str(path)], cwd=root, capture_output=True, text=True, timeout=60
    )

    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "colour: unknown key" in proc.stderr
    assert "decide.confirm: must be positive" in proc.stderr
    assert "2 problems" in proc.stderr


def test_try_with_a_broken_program_exits_2(tmp_path: Path, cli: Cli) -> None:
    root = make_repo(tmp_path / "repo")
    path = write(root, {"name": "x"})

    result = cli("run", str(path), cwd=root)

    assert result.exit_code == 2
    assert "target: missing section" in result.stderr
    assert "metric: missing section" in result.stderr


# -- property: any mangled program gives a Program or a ProgramError ---------------

yaml_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["1%", "0%", "100%", "10m", "0s", "-5s", "1h30m", "csv", "auto", "higher"]),
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=8), inner, max_size=4),
    ),
    max_leaves=10,
)


def key_paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = []
    if isinstance(data, dict):
        for key, value in data.items():
            paths.append((*prefix, key))
            paths.extend(key_paths(value, (*prefix, key)))
    return paths


@st.composite
def mangled_front_matter(draw: st.DrawFn) -> Any:
    data = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 4))):
        paths = key_paths(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(yaml_values)
        elif action == "delete":
            del parent[path[-1]]
        else:
            parent[draw(st.text(max_size=8))] = draw(yaml_values)
    return data


def check_clean(text: str | bytes) -> None:
    """Loading gives a Program (that can be turned into a target) or a ProgramError."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel in ("knobs.json", "w.py", "k.py"):
            (root / rel).write_text("{}")
        path = root / "p.md"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        try:
            program = load_program(path, root=root)
        except ProgramError as exc:
            assert exc.problems
            assert all(isinstance(p.message, str) and p.message for p in exc.problems)
            return
        assert isinstance(program, Program)
        if program.target.kind == "command":
            command_target(program)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled_front_matter())
def test_mangled_front_matter_never_raises_anything_else(front: Any) -> None:
    check_clean("---\n" + yaml.safe_dump(front, sort_keys=False) + "---\nbody\n")


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 400))
def test_random_bytes_spliced_into_a_program_never_raise_anything_else(
    junk: bytes, at: int
) -> None:
    text = ("---\n" + yaml.safe_dump(VALID, sort_keys=False) + "---\nbody\n").encode()
    at = min(at, len(text))
    check_clean(text[:at] + junk + text[at:])


@settings(max_examples=100, deadline=None)
@given(yaml_values)
def test_any_yaml_value_as_front_matter_never_raises_anything_else(value: Any) -> None:
    check_clean("---\n" + yaml.safe_dump(value) + "---\n")
