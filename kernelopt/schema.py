"""program.md's front-matter keys, declared once.

Each key is declared with its type, default and help (keys.py). The same
declaration drives validation (every problem reported at once, with its key
path), defaults, the `kernelopt init` template and the reference in docs.
"""

from __future__ import annotations

from typing import Any

from kernelopt.keys import (
    Key,
    Problem,
    Section,
    duration_ok,
    knob_values_ok,
    non_negative,
    parse_percent,
    percent_ok,
    positive,
    positive_duration_ok,
    range_ok,
    ray_address_ok,
    reference,
    resources_ok,
)
from kernelopt.keys import validate as validate_section
from kernelopt.names import name_problem

TARGET_KINDS = ("nki", "command")
DEVICE_KINDS = ("auto", "sim", "neuron", "nvidia", "rocm", "none")

SCHEMA = Section(
    "a kernelopt program",
    {
        "kernelopt": Key("int", "program format version", default=1, choices=(1,)),
        "name": Key(
            "str",
            "the program's name; runs are branches kernelopt/<name>-<tag>",
            check=name_problem,
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
                "fixed": Key(
                    "list[str]",
                    "paths (files, folders or globs from the repository root) a candidate may "
                    "not change: such a candidate is refused, never measured. The program file "
                    "and performance.md are always fixed. Default: the files the command names "
                    "(its script; not the knob file), the workload, the results file",
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
                "valid": Key(
                    "range",
                    "[lo, hi] a measurement must fall in (null: no bound); "
                    "default: finite, and above 0 where lower is better",
                    default=None,
                    check=range_ok,
                ),
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
                    check=duration_ok,
                ),
                "max_wait": Key(
                    "duration",
                    "stop the run after waiting this long for an idle device",
                    default="60m",
                    check=duration_ok,
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
                            check=ray_address_ok,
                        ),
                        "num_cpus": Key(
                            "int",
                            "CPUs of a local cluster (address local; default: all)",
                            default=None,
                            check=positive,
                        ),
                        "resources_per_device": Key(
                            "mapping",
                            "Ray resources one device takes, e.g. {neuron_cores: 2} (default: neuron_cores per device.neuron.lnc, GPU 1, or CPU 1)",
                            default=None,
                            check=resources_ok,
                        ),
                        "task_timeout": Key(
                            "duration",
                            "longest a Ray call may take beyond the measurement's own timeout before the node counts as lost",
                            default="120s",
                            check=positive_duration_ok,
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
                        "sdk_path": Key(
                            "str",
                            "the measuring path: auto (probe the host), nrtpy (SDK >= 2.32: nki compile, nrtpy runs and times), capture (SDK 2.22-2.31: the profiler's capture of the NEFF fed the seeded inputs, timed from total_time over several executions) or baremetal (SDK 2.22-2.27: neuronxcc.nki.baremetal compiles and runs the beta-1 kernel on the leased core, nki.benchmark and the profiler's captures time it)",
                            default="auto",
                            choices=("auto", "nrtpy", "capture", "baremetal"),
                        ),
                        "kernel_api": Key(
                            "str",
                            "the NKI namespace of the kernel shipped to the host: auto (the kernel's own where the host has it, else the other rendering of a KernelIR kernel whose kernel.py is exactly the rendering of its knobs.json), nki (the current namespace) or neuronxcc (NKI beta 1, SDK 2.27 and before)",
                            default="auto",
                            choices=("auto", "nki", "neuronxcc"),
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
                            "int", "untimed runs before timing", default=10, check=non_negative
                        ),
                        "iterations": Key(
                            "int",
                            "timed runs (min and median are reported)",
                            default=100,
                            check=positive,
                        ),
                        "tolerance": Key(
                            "number",
                            "atol = rtol of the check of the device's output against f_numpy",
                            default=1e-2,
                            check=positive,
                        ),
                        "compile_timeout": Key(
                            "duration",
                            "longest one compile may take",
                            default="600s",
                            check=duration_ok,
                        ),
                        "compile_workers": Key(
                            "int",
                            "parallel compiles per host (0: one per CPU)",
                            default=0,
                            check=non_negative,
                        ),
                        "results": Key(
                            "str",
                            "folder for NEFF, NTFF and compiler logs (default: .git/kernelopt/results/<run>)",
                            default=None,
                        ),
                    },
                ),
                "sim": Section(
                    "simulator settings (device kind sim)",
                    {
                        "chip": Key(
                            "str",
                            "the chip the cost model times one NeuronCore of: trn2 or trn1",
                            default="trn2",
                            choices=("trn2", "trn1"),
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
                    "the smallest gain worth keeping: a keep must be better than BEST by more "
                    "than this and significantly so (see 'How the noise rule decides')",
                    default="1%",
                    check=percent_ok,
                ),
                "confirm": Key(
                    "int",
                    "pairs (candidate, then BEST beside it) measured before a noisy target's "
                    "first decision",
                    default=2,
                    check=positive,
                ),
                "max_samples": Key(
                    "int",
                    "most pairs per candidate: still not significant after this many, it is a "
                    "tie (its reason says so)",
                    default=24,
                    check=positive,
                ),
                "max_consecutive_regressions": Key(
                    "int", "stop after this many regressions in a row", default=5, check=positive
                ),
                "recent_window": Key(
                    "int",
                    "regression summaries kept for the stop summary",
                    default=5,
                    check=positive,
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
                    check=positive,
                ),
                "atol": Key(
                    "number",
                    "nki: absolute tolerance of the numerics check",
                    default=5e-3,
                    check=non_negative,
                ),
                "rtol": Key(
                    "number",
                    "nki: relative tolerance of the numerics check",
                    default=5e-3,
                    check=non_negative,
                ),
                "rel_l2": Key(
                    "number",
                    "nki: use a relative L2 error bound instead of atol/rtol, e.g. 1e-2",
                    default=None,
                    check=non_negative,
                ),
            },
        ),
        "stop": Section(
            "when the run ends",
            {
                "target": Key("number", "stop once the best metric reaches this", default=None),
                "max_candidates": Key(
                    "int", "stop after this many candidates", default=None, check=positive
                ),
                "max_hours": Key(
                    "number", "stop after this many hours", default=None, check=positive
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
                "screen": Section(
                    "sim screening of nki knob candidates on device neuron (docs/screening.md); absent: every candidate is measured",
                    {
                        "pool": Key(
                            "int",
                            "candidates drawn, CPU-checked and estimated on sim each round",
                            default=None,
                            check=positive,
                        ),
                        "top": Key(
                            "int",
                            "candidates of the pool with the best estimates that are committed and measured (at most pool)",
                            default=None,
                            check=positive,
                        ),
                        "calibration": Key(
                            "str",
                            "a calibration file (`kernelopt sim calibrate`) whose Trn2 parameters the estimates use",
                            default=None,
                        ),
                        "refit_every": Key(
                            "int",
                            "with metric mfu, refit the estimates' Trn2 parameters to the run's device measurements after every this many new ones (0: never)",
                            default=5,
                            check=non_negative,
                        ),
                    },
                ),
            },
        ),
        "timeout": Key(
            "duration",
            "longest one measurement may take",
            default="10m",
            check=positive_duration_ok,
        ),
    },
)


def validate(data: Any) -> tuple[dict[str, Any], list[Problem]]:
    """Check a program's front matter; return it with defaults filled, and every problem."""
    return validate_section(data, SCHEMA)


def knob_space_problems(space: dict[Any, Any]) -> list[Problem]:
    """Every problem of a command target's knob space, each at target.knobs.space.NAME."""
    problems: list[Problem] = []
    for name, values in space.items():
        where = f"target.knobs.space.{name}"
        if not isinstance(name, str) or not name.strip():
            problems.append(Problem(where, f"a knob's name must be a string, found {name!r}"))
        elif message := knob_values_ok(name, values):
            problems.append(Problem(where, message))
    return problems


__all__ = ["DEVICE_KINDS", "SCHEMA", "TARGET_KINDS", "parse_percent", "validate"]


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
    for path, kind, default, help_text in reference(SCHEMA):
        cell = help_text.replace("|", "\\|")
        lines.append(f"| `{path}` | {kind} | {default.replace('|', chr(92) + '|')} | {cell} |")
    return "\n".join([*lines, *NOISE_RULE]) + "\n"


NOISE_RULE = (
    "",
    "## How the noise rule decides",
    "",
    "A deterministic target (the simulator) is measured once per candidate: any",
    "gain is kept, a loss larger than `decide.noise` is a regression, the rest ties.",
    "",
    "A noisy target (a command, a device) measures the candidate and BEST",
    "alternately on the same device, one pair at a time, and after every pair",
    "(from `decide.confirm` pairs on) asks, on the log ratio of each pair:",
    "",
    "- **keep**: the mean gain is larger than `decide.noise` and its one-sided",
    "  99.9 % confidence bound is above zero (p < 0.001: a decision is looked at",
    "  after every pair, so each look must be strict);",
    "- **regression**: the same, the other way;",
    "- **tie**: the whole 99.9 % interval lies inside ±`decide.noise`; or even a",
    "  reading one standard error better would stay inside it (more pairs could",
    "  not make it a keep); or `decide.max_samples` pairs were measured and it is",
    "  still not significant.",
    "",
    "The spread of earlier decisions of the same run narrows the interval, so a",
    "run gets quicker to decide as it goes. A gain larger than `decide.noise` can",
    "therefore be a tie: `+14.4 % but not significant after 6 pairs: spread ±11 %,",
    "needs p < 0.001` says that the pairs disagreed too much to trust it. Every",
    "verdict carries such a sentence as `reason` (`try --json`, `log --json`,",
    "`log --wide`, the git note).",
    "",
    "BEST's figure is one estimate: the mean of every sample of BEST, its own and",
    "each one re-measured beside a candidate. A verdict is stated against the pair",
    "it was decided on (`vs BEST 24.95 measured beside it (7 pairs)`). A kept",
    "candidate's figure is its own mean, unless that reads worse than BEST's",
    "estimate (the machine got slower since BEST's earlier samples): then it is",
    "BEST's estimate scaled by the ratio measured side by side, so a keep never",
    "shows BEST getting worse.",
)


if __name__ == "__main__":
    print(reference_markdown(), end="")
