"""A program file: YAML front matter (what to tune) + markdown body (the agent brief)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from kernelopt.durations import parse_duration
from kernelopt.keys import Problem
from kernelopt.program_checks import NKI_METRIC_ALIASES, cross_checks, screen_checks
from kernelopt.schema import parse_percent, validate
from kernelopt.validity import MetricRange


class ProgramError(ValueError):
    """Every problem found in a program file, reported together."""

    def __init__(self, path: Path | str, problems: list[Problem]):
        self.path = Path(path)
        self.problems = problems
        lines = [f"{self.path}: {len(problems)} problem{'s' if len(problems) != 1 else ''}"]
        lines += [f"  {p}" for p in problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class KnobFile:
    file: str
    space: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class TargetSpec:
    """What program.md says is measured (`target:`); kernelopt.targets builds the Target."""

    kind: str
    workload: str | None = None
    kernel: str | None = None
    func: str | None = None
    command: str | None = None
    results_format: str = "stdout"
    results_path: str | None = None
    correct: str | None = None
    config_columns: tuple[str, ...] = ()
    knobs: KnobFile | None = None
    format: str | None = None
    fixed: tuple[str, ...] | None = None  # None: derived (kernelopt.rules.fixed_paths)


@dataclass(frozen=True)
class NeuronConfig:
    activate: str | None = None
    compiler_args: tuple[str, ...] = ()
    pipeline_options: tuple[str, ...] = ()
    runtime_activate: str | None = None
    sdk_path: str = "auto"  # auto, nrtpy, capture or baremetal (docs/trn2.md)
    kernel_api: str = "auto"  # auto, nki or neuronxcc: the namespace of the shipped kernel
    runtime_python: str | None = None
    tolerance: float = 1e-2
    lnc: int = 1
    opt: int = 2
    warmup: int = 10
    iterations: int = 100
    compile_timeout_s: float = 600.0
    compile_workers: int = 0
    results: str | None = None


@dataclass(frozen=True)
class SimConfig:
    chip: str = "trn2"


@dataclass(frozen=True)
class RayConfig:
    address: str = "auto"
    num_cpus: int | None = None
    resources_per_device: dict[str, float] | None = None  # None: derived from the device kind
    task_timeout_s: float = 120.0


@dataclass(frozen=True)
class Device:
    kind: str = "auto"
    hosts: tuple[str, ...] = ()
    poll_s: float = 600.0
    max_wait_s: float = 3600.0
    trust_new_hosts: bool = False
    ssh_config: str = "~/.ssh/config"
    python: str = "python3"
    neuron: NeuronConfig = field(default_factory=NeuronConfig)
    executor: str = "hosts"
    ray: RayConfig = field(default_factory=RayConfig)
    sim: SimConfig = field(default_factory=SimConfig)


@dataclass(frozen=True)
class DecideConfig:
    noise: float = 0.01
    confirm: int = 2
    max_samples: int = 24
    max_consecutive_regressions: int = 5
    recent_window: int = 5
    repair_attempts: int = 3
    correctness_seeds: int = 3
    atol: float = 5e-3
    rtol: float = 5e-3
    rel_l2: float | None = None


@dataclass(frozen=True)
class StopConfig:
    target: float | None = None
    max_candidates: int | None = None
    max_hours: float | None = None


@dataclass(frozen=True)
class ScreenConfig:
    """search.screen: ``pool`` candidates estimated on sim per round, the ``top`` best measured."""

    pool: int
    top: int
    calibration: str | None = None
    refit_every: int = 5  # device measurements between live refits; 0: none


@dataclass(frozen=True)
class Program:
    path: Path
    name: str
    target: TargetSpec
    metric: str
    better: str
    device: Device
    decide: DecideConfig
    stop: StopConfig
    strategy: str
    seed: int
    timeout_s: float
    body: str
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    screen: ScreenConfig | None = None

    @property
    def metric_range(self) -> MetricRange:
        """The values of the metric that are measurements (``metric.valid``)."""
        return MetricRange.of(self.raw.get("metric", {}).get("valid"), self.better)

    @property
    def metric_key(self) -> str:
        """The field looked up in a measurement (aliases resolved for nki targets)."""
        if self.target.kind == "nki":
            return NKI_METRIC_ALIASES.get(self.metric, self.metric)
        return self.metric


class _FrontMatterLoader(yaml.SafeLoader):
    """Safe YAML without aliases. Front matter is a dozen short keys, so an alias
    saves nothing, while a few nested ones ("billion laughs") expand into a value
    whose every use (validation, error messages, notes) takes minutes and gigabytes.
    Refusing them is one rule a user can read; a bound on expansion would be a
    number to tune."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None,
                None,
                "aliases (*name) are not allowed in front matter; write the value out",
                self.peek_event().start_mark,
            )
        return super().compose_node(parent, index)


def split_front_matter(text: str) -> tuple[str | None, str, int]:
    """(front matter, body, line where the body starts); front matter None when absent."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text, 1
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :]), i + 2
    return None, text, 1


def load_program(path: str | Path, root: str | Path | None = None) -> Program:
    """Parse and check ``path``. Files named in it are resolved against ``root``
    (default: the git top level containing the program, else its folder)."""
    path = Path(path)
    if not path.is_file():
        raise ProgramError(path, [Problem("", "program file does not exist")])
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProgramError(path, [Problem("", f"cannot read it: {exc}")]) from None
    return program_from_text(path, text, root)


def program_from_text(path: str | Path, text: str, root: str | Path | None = None) -> Program:
    """Parse and check ``text`` as the program at ``path`` (e.g. as a commit holds it)."""
    path = Path(path)
    front, body, _ = split_front_matter(text)
    if front is None:
        raise ProgramError(
            path,
            [
                Problem(
                    "",
                    "no YAML front matter: the file must start with a '---' line and close it with another",
                )
            ],
        )
    try:
        data = yaml.load(front, Loader=_FrontMatterLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 2}" if mark is not None else "front matter"
        problem = getattr(exc, "problem", None) or str(exc)
        raise ProgramError(path, [Problem(where, f"invalid YAML: {problem}")]) from None
    if data is None:
        data = {}
    values, problems = validate(data)
    root = Path(root) if root is not None else _find_root(path)
    # Files and metrics are checked whenever the sections they depend on are
    # sound, so one pass shows a missing file beside a bad noise threshold.
    if not any(p.path.split(".", 1)[0] in ("", "target", "metric") for p in problems):
        problems += cross_checks(values, root)
    screen = ((values.get("search") or {}) if isinstance(values, dict) else {}).get("screen")
    if isinstance(screen, dict) and not any(p.path.startswith("search") for p in problems):
        target = values.get("target")
        problems += screen_checks(screen, target.get("kind") if isinstance(target, dict) else None)
    if problems:
        raise ProgramError(path, problems)
    return _with_workload_defaults(_build(path, values, body, data), root)


def _with_workload_defaults(program: Program, root: Path) -> Program:
    """The seed's six-name workload.py: its HOSTS and TARGET_MFU fill what the program leaves out."""
    if program.target.kind != "nki" or not program.target.workload:
        return program
    path = root / program.target.workload
    text = path.read_text() if path.is_file() else ""
    if "HOSTS" not in text and "TARGET_MFU" not in text:
        return program  # nothing to take; importing the workload is not needed
    from kernelopt.workload import WorkloadError, load_workload

    try:
        workload = load_workload(path, require=("f_numpy", "INPUT_SPECS"))
    except WorkloadError as exc:
        raise ProgramError(program.path, [Problem("target.workload", str(exc))]) from None
    device, stop = program.device, program.stop
    if not device.hosts and workload.hosts:
        device = replace(device, hosts=workload.hosts)
    if (
        stop.target is None
        and workload.target_mfu is not None
        and program.metric in ("mfu", "mfu_estimated_percent")
    ):
        stop = replace(stop, target=workload.target_mfu)
    return replace(program, device=device, stop=stop)


def _find_root(path: Path) -> Path:
    for parent in [path.resolve().parent, *path.resolve().parents]:
        if (parent / ".git").exists():
            return parent
    return path.resolve().parent


def _build(path: Path, v: dict[str, Any], body: str, raw: dict[str, Any]) -> Program:
    t = v["target"]
    knobs = t.get("knobs")
    if isinstance(knobs, str):
        knob_file = KnobFile(file=knobs)
    elif isinstance(knobs, dict):
        knob_file = KnobFile(
            file=knobs["file"], space={k: tuple(vals) for k, vals in knobs["space"].items()}
        )
    else:
        knob_file = None
    target = TargetSpec(
        kind=t["kind"],
        workload=t.get("workload"),
        kernel=t.get("kernel"),
        func=t.get("func"),
        command=t.get("command"),
        results_format=t["results"]["format"],
        results_path=t["results"].get("path"),
        correct=t.get("correct"),
        config_columns=tuple(t.get("config_columns") or ()),
        knobs=knob_file,
        format=t.get("format"),
        fixed=tuple(t["fixed"]) if t.get("fixed") is not None else None,
    )
    device = _device(v["device"])
    decide = _decide(v["decide"])
    s = v["stop"]
    stop = StopConfig(
        target=float(s["target"]) if s.get("target") is not None else None,
        max_candidates=s.get("max_candidates"),
        max_hours=float(s["max_hours"]) if s.get("max_hours") is not None else None,
    )
    return Program(
        path=path,
        name=v["name"],
        target=target,
        metric=v["metric"]["name"],
        better=v["metric"]["better"],
        device=device,
        decide=decide,
        stop=stop,
        strategy=v["search"]["strategy"],
        seed=v["search"]["seed"],
        screen=_screen(v["search"]["screen"]),
        timeout_s=parse_duration(v["timeout"]),
        body=body.strip() + "\n",
        raw=raw,
    )


def _screen(s: dict[str, Any]) -> ScreenConfig | None:
    if s.get("pool") is None:
        return None
    return ScreenConfig(
        pool=s["pool"], top=s["top"], calibration=s.get("calibration"), refit_every=s["refit_every"]
    )


def _device(d: dict[str, Any]) -> Device:
    return Device(
        kind=d["kind"],
        hosts=tuple(d["hosts"]),
        poll_s=parse_duration(d["poll"]),
        max_wait_s=parse_duration(d["max_wait"]),
        trust_new_hosts=d["trust_new_hosts"],
        ssh_config=d["ssh_config"],
        python=d["python"],
        neuron=NeuronConfig(
            activate=d["neuron"]["activate"],
            compiler_args=tuple(d["neuron"]["compiler_args"]),
            pipeline_options=tuple(d["neuron"]["pipeline_options"]),
            runtime_activate=d["neuron"]["runtime_activate"],
            sdk_path=d["neuron"]["sdk_path"],
            kernel_api=d["neuron"]["kernel_api"],
            runtime_python=d["neuron"]["runtime_python"],
            tolerance=float(d["neuron"]["tolerance"]),
            lnc=d["neuron"]["lnc"],
            opt=d["neuron"]["opt"],
            warmup=d["neuron"]["warmup"],
            iterations=d["neuron"]["iterations"],
            compile_timeout_s=parse_duration(d["neuron"]["compile_timeout"]),
            compile_workers=d["neuron"]["compile_workers"],
            results=d["neuron"]["results"],
        ),
        executor=d["executor"],
        sim=SimConfig(chip=d["sim"]["chip"]),
        ray=RayConfig(
            address=d["ray"]["address"],
            num_cpus=d["ray"]["num_cpus"],
            resources_per_device=(
                {str(k): float(v) for k, v in d["ray"]["resources_per_device"].items()}
                if d["ray"]["resources_per_device"] is not None
                else None
            ),
            task_timeout_s=parse_duration(d["ray"]["task_timeout"]),
        ),
    )


def _decide(dc: dict[str, Any]) -> DecideConfig:
    return DecideConfig(
        noise=parse_percent(dc["noise"]),
        confirm=dc["confirm"],
        max_samples=max(dc["max_samples"], dc["confirm"]),
        max_consecutive_regressions=dc["max_consecutive_regressions"],
        recent_window=dc["recent_window"],
        repair_attempts=dc["repair_attempts"],
        correctness_seeds=dc["correctness_seeds"],
        atol=float(dc["atol"]),
        rtol=float(dc["rtol"]),
        rel_l2=float(dc["rel_l2"]) if dc.get("rel_l2") is not None else None,
    )
