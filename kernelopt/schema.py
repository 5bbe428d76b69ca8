"""The program.md front-matter schema, declared once.

Each key is declared with its type, default and help. The same declaration
drives validation (every problem reported at once, with its key path),
defaults, the `kernelopt init` template and the reference in docs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kernelopt.durations import parse_duration

MISSING: Any = object()


@dataclass(frozen=True)
class Problem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True)
class Key:
    """A leaf value. ``kind`` names the accepted type for messages."""

    kind: str
    help: str
    default: Any = MISSING
    choices: tuple[Any, ...] = ()
    check: Callable[[Any], str | None] | None = None  # returns a message when invalid

    @property
    def required(self) -> bool:
        return self.default is MISSING


@dataclass(frozen=True)
class Section:
    help: str
    keys: Mapping[str, Key | Section]
    required: bool = False
    open: bool = False  # free-form mapping (e.g. a knob space), values checked by ``check``
    check: Callable[[Any], str | None] | None = None


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "number": (int, float),
    "bool": (bool,),
    "list[str]": (list,),
    "duration": (str, int, float),
    "percent": (str, int, float),
    "mapping": (dict,),
}


def parse_percent(value: Any) -> float:
    """A fraction from ``1%`` or ``0.01`` (a bare number below 1 is a fraction)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a percentage like 1%, got {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not text.endswith("%"):
            raise ValueError(f"expected a percentage like 1%, got {value!r}")
        try:
            number = float(text[:-1]) / 100.0
        except ValueError:
            raise ValueError(f"expected a percentage like 1%, got {value!r}") from None
    else:
        number = float(value)
        if number >= 1:
            number /= 100.0
    if not 0 <= number < 1:
        raise ValueError(f"a noise threshold must be between 0% and 100%, got {value!r}")
    return number


def _positive(value: Any) -> str | None:
    return None if value is None or value > 0 else f"must be positive, got {value!r}"


def _non_negative(value: Any) -> str | None:
    return None if value >= 0 else f"must be 0 or more, got {value!r}"


def _parses(parse: Callable[[Any], object]) -> Callable[[Any], str | None]:
    """A check that passes when ``parse`` accepts the value, else returns its message."""

    def check(value: Any) -> str | None:
        try:
            parse(value)
        except ValueError as exc:
            return str(exc)
        return None

    return check


def _positive_duration_ok(value: Any) -> str | None:
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        return str(exc)
    if not (math.isfinite(seconds) and seconds > 0):
        return f"must be a positive duration such as 30s or 10m, got {value!r}"
    return None


_duration_ok = _parses(parse_duration)
_percent_ok = _parses(parse_percent)


def _knob_space_ok(space: Any) -> str | None:
    for name, values in space.items():
        if not isinstance(values, list) or not values:
            return f"knob {name!r} must list its values, e.g. {name}: [32, 64, 128]"
    return None


def _ray_address_ok(value: Any) -> str | None:
    if value in ("auto", "local") or value.startswith("ray://"):
        return None
    return f"expected auto, local or a ray://host:port address, got {value!r}"


def _resources_ok(value: Any) -> str | None:
    for name, amount in value.items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount <= 0:
            return f"resource {name!r} needs a positive amount, got {amount!r}"
    return None


TARGET_KINDS = ("nki", "command")
DEVICE_KINDS = ("auto", "sim", "neuron", "nvidia", "rocm", "none")

SCHEMA = Section(
    "a kernelopt program",
    {
        "kernelopt": Key("int", "program format version", default=1, choices=(1,)),
        "name": Key(
            "str",
            "the program's name; runs are branches kernelopt/<name>-<tag>",
            check=lambda v: (
                None
                if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", v)
                else "use letters, digits, '.', '_' and '-' only (it names a git branch)"
            ),
        ),
        "target": Section(
            "what is measured",
            {
                "kind": Key(
                    "str",
                    "nki (a KernelIR kernel) or command (any benchmark)",
                    choices=TARGET_KINDS,
                ),
                "workload": Key(
                    "str", "nki: the workload.py with f_nkigym, f_numpy, INPUT_SPECS", default=None
                ),
                "kernel": Key("str", "nki: the rendered NKI source that is measured", default=None),
                "func": Key(
                    "str",
                    "nki: the @nki.jit function when the kernel file has several",
                    default=None,
                ),
                "command": Key(
                    "str", "command: the benchmark command, run in the tree root", default=None
                ),
                "results": Section(
                    "command: where the results are",
                    {
                        "format": Key(
                            "str",
                            "csv, json or stdout (key: value lines)",
                            default="stdout",
                            choices=("csv", "json", "stdout"),
                        ),
                        "path": Key(
                            "str", "csv/json: file or glob relative to the tree root", default=None
                        ),
                    },
                ),
                "correct": Key(
                    "str",
                    "command: an expression that must hold on every row, e.g. 'err == 0'",
                    default=None,
                ),
                "config_columns": Key(
                    "list[str]", "command: columns that name a config class", default=[]
                ),
                "knobs": Key(
                    "str|mapping",
                    "nki: the knobs.json path; command: {file: knobs.json, space: {NAME: [values]}}",
                    default=None,
                ),
                "format": Key(
                    "str",
                    "a formatter command run on every candidate before it is committed",
                    default=None,
                ),
            },
            required=True,
        ),
        "metric": Section(
            "the number that decides",
            {
                "name": Key("str", "the metric's name (nki: mfu, total_time or any profile field)"),
                "better": Key("str", "higher or lower", choices=("higher", "lower")),
            },
            required=True,
        ),
        "device": Section(
            "where candidates are measured",
            {
                "kind": Key(
                    "str",
                    "auto, sim, neuron, nvidia, rocm or none",
                    default="auto",
                    choices=DEVICE_KINDS,
                ),
                "hosts": Key(
                    "list[str]", "ssh host aliases; localhost is this machine", default=[]
                ),
                "poll": Key(
                    "duration",
                    "wait between idle checks when every device is busy",
                    default="10m",
                    check=_duration_ok,
                ),
                "max_wait": Key(
                    "duration",
                    "stop the run after waiting this long for an idle device",
                    default="60m",
                    check=_duration_ok,
                ),
                "trust_new_hosts": Key(
                    "bool", "accept ssh host keys not yet in known_hosts", default=False
                ),
                "ssh_config": Key(
                    "str", "the ssh config file host aliases are read from", default="~/.ssh/config"
                ),
                "python": Key(
                    "str", "the Python with kernelopt installed on remote hosts", default="python3"
                ),
                "executor": Key(
                    "str",
                    "hosts (the gate and locks on device.hosts) or ray (a Ray cluster schedules devices)",
                    default="hosts",
                    choices=("hosts", "ray"),
                ),
                "ray": Section(
                    "Ray cluster settings (device.executor ray)",
                    {
                        "address": Key(
                            "str",
                            "auto (the running cluster), ray://host:port, or local to start one in this process",
                            default="auto",
                            check=_ray_address_ok,
                        ),
                        "num_cpus": Key(
                            "int",
                            "CPUs of a local cluster (address local; default: all)",
                            default=None,
                            check=_positive,
                        ),
                        "resources_per_device": Key(
                            "mapping",
                            "Ray resources one device takes, e.g. {neuron_cores: 2} (default: neuron_cores per device.neuron.lnc, GPU 1, or CPU 1)",
                            default=None,
                            check=_resources_ok,
                        ),
                        "task_timeout": Key(
                            "duration",
                            "longest a Ray call may take beyond the measurement's own timeout before the node counts as lost",
                            default="120s",
                            check=_positive_duration_ok,
                        ),
                    },
                ),
                "neuron": Section(
                    "Trainium2 measurement settings (device kind neuron)",
                    {
                        "activate": Key(
                            "str",
                            "a script sourced on the host before the Neuron tools run, e.g. ~/venvs/kernel-env/bin/activate",
                            default=None,
                        ),
                        "runtime_activate": Key(
                            "str",
                            "a script sourced before the runtime (nrtpy) runs and times a NEFF, when nrtpy lives in an environment of its own (the nki and nrtpy wheels cannot share one); default: activate",
                            default=None,
                        ),
                        "runtime_python": Key(
                            "str",
                            "the Python of the runtime environment (default: device.python)",
                            default=None,
                        ),
                        "compiler_args": Key(
                            "list[str]",
                            "neuronx-cc command-line options for SDKs whose compile entry is neuronxcc.nki_standalone, passed unchanged",
                            default=[],
                        ),
                        "pipeline_options": Key(
                            "list[str]",
                            "compiler pipeline options for the NKI compiler API, e.g. enable-linear-scan-allocation=false",
                            default=[],
                        ),
                        "lnc": Key(
                            "int", "logical NeuronCore config (1 or 2)", default=1, choices=(1, 2)
                        ),
                        "opt": Key(
                            "int",
                            "neuronx-cc optimisation level (-O; neuronxcc.nki_standalone SDKs)",
                            default=2,
                            choices=(1, 2, 3),
                        ),
                        "warmup": Key(
                            "int", "untimed runs before timing", default=10, check=_non_negative
                        ),
                        "iterations": Key(
                            "int",
                            "timed runs (min and median are reported)",
                            default=100,
                            check=_positive,
                        ),
                        "tolerance": Key(
                            "number",
                            "atol = rtol of the check of the device's output against f_numpy",
                            default=1e-2,
                            check=_positive,
                        ),
                        "compile_timeout": Key(
                            "duration",
                            "longest one compile may take",
                            default="600s",
                            check=_duration_ok,
                        ),
                        "compile_workers": Key(
                            "int",
                            "parallel compiles per host (0: one per CPU)",
                            default=0,
                            check=_non_negative,
                        ),
                        "results": Key(
                            "str",
                            "folder for NEFF, NTFF and compiler logs (default: .git/kernelopt/results/<run>)",
                            default=None,
                        ),
                    },
                ),
            },
        ),
        "decide": Section(
            "the keep/revert rule",
            {
                "noise": Key(
                    "percent",
                    "changes smaller than this are noise",
                    default="1%",
                    check=_percent_ok,
                ),
                "confirm": Key(
                    "int",
                    "measurements of candidate and best before a noisy decision",
                    default=2,
                    check=_positive,
                ),
                "max_samples": Key(
                    "int",
                    "most measurements of each side before calling it a tie",
                    default=24,
                    check=_positive,
                ),
                "max_consecutive_regressions": Key(
                    "int", "stop after this many regressions in a row", default=5, check=_positive
                ),
                "recent_window": Key(
                    "int",
                    "regression summaries kept for the stop summary",
                    default=5,
                    check=_positive,
                ),
                "repair_attempts": Key(
                    "int",
                    "repairs of an incorrect candidate (with an agent)",
                    default=3,
                    check=lambda v: None if v >= 0 else "must be 0 or more",
                ),
                "correctness_seeds": Key(
                    "int",
                    "nki: seeded input sets every candidate is checked on",
                    default=3,
                    check=_positive,
                ),
                "atol": Key(
                    "number",
                    "nki: absolute tolerance of the numerics check",
                    default=5e-3,
                    check=_non_negative,
                ),
                "rtol": Key(
                    "number",
                    "nki: relative tolerance of the numerics check",
                    default=5e-3,
                    check=_non_negative,
                ),
                "rel_l2": Key(
                    "number",
                    "nki: use a relative L2 error bound instead of atol/rtol, e.g. 1e-2",
                    default=None,
                    check=_non_negative,
                ),
            },
        ),
        "stop": Section(
            "when the run ends",
            {
                "target": Key("number", "stop once the best metric reaches this", default=None),
                "max_candidates": Key(
                    "int", "stop after this many candidates", default=None, check=_positive
                ),
                "max_hours": Key(
                    "number", "stop after this many hours", default=None, check=_positive
                ),
            },
        ),
        "search": Section(
            "where knob candidates come from",
            {
                "strategy": Key(
                    "str",
                    "auto, sweep or random",
                    default="auto",
                    choices=("auto", "sweep", "random"),
                ),
                "seed": Key("int", "seed for sampled candidates", default=0),
            },
        ),
        "timeout": Key(
            "duration",
            "longest one measurement may take",
            default="10m",
            check=_positive_duration_ok,
        ),
    },
)


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "str|mapping":
        return isinstance(value, (str, dict))
    types = _TYPES[kind]
    if kind in ("int", "number") and isinstance(value, bool):
        return False
    if not isinstance(value, types):
        return False
    if kind == "list[str]":
        return all(isinstance(v, str) for v in value)
    return True


def validate(
    data: Any, section: Section = SCHEMA, path: str = ""
) -> tuple[dict[str, Any], list[Problem]]:
    """Check ``data`` against ``section``; return it with defaults filled, and every problem."""
    problems: list[Problem] = []
    if not isinstance(data, dict):
        problems.append(Problem(path, f"expected a mapping, found {type(data).__name__}"))
        return {}, problems
    out: dict[str, Any] = {}
    for name in data:
        if name not in section.keys:
            allowed = ", ".join(section.keys)
            problems.append(Problem(_join(path, str(name)), f"unknown key (allowed: {allowed})"))
    for name, spec in section.keys.items():
        where = _join(path, name)
        if isinstance(spec, Section):
            if name not in data or data[name] is None:
                if spec.required:
                    problems.append(Problem(where, f"missing section ({spec.help})"))
                sub, sub_problems = validate({}, spec, where)
                problems.extend(p for p in sub_problems if spec.required is False or name in data)
                out[name] = sub
            else:
                sub, sub_problems = validate(data[name], spec, where)
                problems.extend(sub_problems)
                out[name] = sub
            continue
        if name not in data:
            if spec.required:
                problems.append(Problem(where, f"missing required key ({spec.kind}: {spec.help})"))
            else:
                out[name] = _copy(spec.default)
            continue
        value = data[name]
        if value is None and not spec.required and spec.default is None:
            out[name] = None
            continue
        if not _type_ok(spec.kind, value):
            problems.append(
                Problem(where, f"expected {spec.kind}, found {type(value).__name__} {value!r}")
            )
            continue
        if spec.choices and value not in spec.choices:
            options = ", ".join(str(c) for c in spec.choices)
            problems.append(Problem(where, f"expected one of {options}, found {value!r}"))
            continue
        if spec.check is not None:
            message = spec.check(value)
            if message:
                problems.append(Problem(where, message))
                continue
        out[name] = value
    return out, problems


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def reference(section: Section = SCHEMA, path: str = "") -> list[tuple[str, str, str, str]]:
    """(key path, type, default, help) rows for docs and `kernelopt init --help`."""
    rows: list[tuple[str, str, str, str]] = []
    for name, spec in section.keys.items():
        where = _join(path, name)
        if isinstance(spec, Section):
            rows.append((where, "section", "required" if spec.required else "", spec.help))
            rows.extend(reference(spec, where))
        else:
            default = "required" if spec.required else repr(spec.default)
            rows.append((where, spec.kind, default, spec.help))
    return rows


def knob_space_problem(space: Any) -> str | None:
    return _knob_space_ok(space)


def reference_markdown() -> str:
    """docs/program.md: the key reference, generated from the schema (tests keep it in sync)."""
    lines = [
        "# program.md reference",
        "",
        "A program is a markdown file whose YAML front matter says what to tune, how",
        "to measure it, the noise rule and when to stop; its body is the brief an",
        "agent follows. This table is generated from the schema kernelopt validates",
        "with (`python -m kernelopt.schema > docs/program.md`): every problem in a",
        "program is reported at once, with its key path, before anything runs.",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for path, kind, default, help_text in reference():
        cell = help_text.replace("|", "\\|")
        lines.append(f"| `{path}` | {kind} | {default.replace('|', chr(92) + '|')} | {cell} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference_markdown(), end="")
