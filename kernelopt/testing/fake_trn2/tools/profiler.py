"""Fake Neuron profiler CLI, as ``neuron-profile`` and ``neuron-explorer``, written
from the public record, interface by interface:

* ``capture -n FILE.neff -s PROFILE.ntff [--profile-nth-exec=N] [--num-exec=N]
  [--enable-dge-notifs] [--save-output] [--disable-profile] [NAME FILE ...]``:
  runs the NEFF on a NeuronCore and writes the trace; with ``--profile-nth-exec=N``
  the trace of the N-th execution goes to ``PROFILE_exec_N.ntff``. Sources:
  aws-neuron/aws-neuron-sdk tools/neuron-explorer/how-to-profile-workload.rst
  ("neuron-explorer capture" replaces the deprecated "neuron-profile capture",
  identical interface; zero bytes for inputs not provided) and the Neuron Profiler
  user guide (``-n``/``-s``), the NKI profiling guide (``--profile-nth-exec``).
  The ``_exec_N`` file name follows awslabs/nki-autotune's profiler (unverified in
  the docs). Inputs come as ``NAME FILE`` pairs, each FILE the input's raw bytes
  (``ndarray.tofile``, no header), an input not given is zero bytes; with
  ``--save-output`` each output is written as raw bytes in the NEFF's output dtype
  to a file in the working folder, named in a log line ``saved output "NAME" as
  "FILE"``; ``--disable-profile`` runs without writing a trace (no ``-s`` needed);
  ``--neff`` / ``--session-file`` are ``-n`` / ``-s``. All of these follow the one
  public runner that uses them (awslabs/nki-autotune
  ``nkigym/src/nkigym/profile/_runner.py``, ``_capture_outputs``); the Neuron docs
  are silent on them, and on the output file's name (the fake's own). How a wrong
  input size is reported is unverified; the fake refuses it.
* The core it runs on: NEURON_RT_VISIBLE_CORES when set, else core 0, like the
  runtime it uses (``kernelopt.testing.fake_trn2.cores``).
* ``view -n FILE.neff -s PROFILE.ntff --output-format summary-json``: one
  top-level key holding a flat dict, -1 where a metric is not available
  (the older Neuron Profiler user guide; awslabs/nki-autotune reads it the same
  way). The ``*_percent`` unit is the tool's:
  - ``neuron-profile``: fractions in [0, 1] (zhang677/AccelOpt
    ``profile_results.csv``; nki-autotune scales by 100 itself). Whether its
    summary-json also carries ``instance_type``, ``compiler_version`` and
    ``runtime_version`` is unverified; the fake prints them.
  - ``neuron-explorer``: fractions in [0, 1] as well: a public Trn2 run log of
    its summary-json under Neuron 2.30 (``tensor_engine_active_time_percent``
    0.1806 = active time / ``total_time``), public scripts that multiply its
    ``*_percent`` by 100, and the migration guide's "same interface". (The
    "percent" of ``profile-schema-reference.rst`` is the unit of the Parquet
    tables, not of summary-json.) ``instance_type``, ``compiler_version`` and
    ``runtime_version`` are Metadata fields in Explorer's schema, not Summary
    ones, so its summary-json has none of them (unverified for summary-json).
    The setting ``explorer_percent_unit: "percent"`` stands for a release that
    printed percent instead (none is on record), to test kernelopt's cross-check.
* ``--version``: one line ending in the version (unverified format).

The numbers come from the fake device's model stored in the NEFF and the
traced execution's own (noisy) time stored in the NTFF.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.testing.fake_trn2 import config, hardware, neff
from kernelopt.testing.fake_trn2.cores import PlacementError, place

# The summary-json fields the fake prints (docs/trn2.md, "Fake contract").
SUMMARY_FIELDS = (
    "total_time",
    "total_active_time",
    "mfu_estimated_percent",
    "mfu_max_achievable_estimated_percent",
    "mbu_estimated_percent",
    "hfu_estimated_percent",
    "tensor_engine_active_time",
    "tensor_engine_active_time_percent",
    "vector_engine_active_time",
    "vector_engine_active_time_percent",
    "scalar_engine_active_time",
    "scalar_engine_active_time_percent",
    "gpsimd_engine_active_time",
    "gpsimd_engine_active_time_percent",
    "dma_active_time",
    "dma_active_time_percent",
    "dma_transfer_total_bytes",
    "dma_transfer_count",
    "hbm_read_bytes",
    "hbm_write_bytes",
    "sbuf_read_bytes",
    "psum_read_bytes",
    "spill_save_bytes",
    "spill_reload_bytes",
    "matmul_instruction_count",
    "neuroncore_cycle_count",
    "nc_idx",
    "nd_idx",
    "instance_type",
    "compiler_version",
    "runtime_version",
)
# Metadata, not Summary, fields in Neuron Explorer's schema.
METADATA_FIELDS = ("instance_type", "compiler_version", "runtime_version")
# The unit of each tool's *_percent fields: fractions (the public outputs of both).
PERCENT_SCALE = {"fraction": 0.01, "percent": 1.0}
CAPTURE_FLAGS = (
    "--profile-nth-exec",
    "--num-exec",
    "--enable-dge-notifs",
    "--save-output",
    "--disable-profile",
)
# The options that take a value (as the next word or after "=").
VALUED = ("-n", "--neff", "--neff-path", "-s", "--session-file", "--profile-nth-exec", "--num-exec")


def _option(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _unknown(argv: list[str], known: tuple[str, ...]) -> list[str]:
    flags = [a.split("=", 1)[0] for a in argv if a.startswith("-")]
    allowed = {"-n", "--neff", "--neff-path", "-s", "--session-file", *known}
    return [f for f in flags if f not in allowed]


def ntff_path(requested: str, nth: str | None) -> Path:
    """Where capture writes: the -s name, or NAME_exec_N.ntff for --profile-nth-exec=N."""
    path = Path(requested)
    return path.with_name(f"{path.stem}_exec_{nth}{path.suffix}") if nth else path


def summary(
    data: dict[str, Any], trace: dict[str, Any], settings: dict[str, Any], tool: str
) -> dict:
    model = dict(data["profile"])
    modelled = float(model.get("total_time") or 0.0)
    measured = float(trace["total_time"])
    scale = modelled / measured if measured > 0 else 1.0
    values: dict[str, Any] = {"total_time": measured}
    for key in ("total_active_time",):
        if key in model:
            values[key] = float(model[key]) / scale
    for key in ("mfu_estimated_percent", "hfu_estimated_percent", "mbu_estimated_percent"):
        if key in model:
            values[key] = float(model[key]) * scale
    for key in SUMMARY_FIELDS:
        if key not in values and key in model:
            values[key] = model[key]
        if key.endswith("_active_time") and f"{key}_percent" in model:
            values[key] = float(model[f"{key}_percent"]) / 100.0 * measured
    values["nc_idx"] = trace.get("nc_idx", 0)
    values["nd_idx"] = trace.get("nd_idx", 0)
    values["instance_type"] = settings["instance_type"]
    values["compiler_version"] = data["compiler_version"]
    values["runtime_version"] = settings["runtime_version"]
    flat: dict[str, Any] = {}
    for key in SUMMARY_FIELDS:
        if tool == "neuron-explorer" and key in METADATA_FIELDS:
            continue
        if key in settings["unavailable"] or key not in values:
            flat[key] = -1
        elif key.endswith("_percent"):
            unit = settings["explorer_percent_unit"] if tool == "neuron-explorer" else "fraction"
            flat[key] = float(values[key]) * PERCENT_SCALE[unit]
        else:
            flat[key] = values[key]
    return flat


def _inputs(
    tool: str, positional: list[str], declared: dict[str, Any]
) -> tuple[dict[str, np.ndarray], dict[str, str], str | None]:
    """The NEFF's inputs as fed by ``NAME FILE`` pairs of raw bytes (zeros where none is
    given), the digest of what each was fed ("zeros" for none), or an error text."""
    if len(positional) % 2:
        return {}, {}, f"{tool} capture: inputs come as NAME FILE pairs, got {positional}"
    given = dict(zip(positional[::2], positional[1::2], strict=True))
    unknown = sorted(set(given) - set(declared))
    if unknown:
        return {}, {}, f"{tool} capture: the NEFF has no input {unknown[0]!r} ({sorted(declared)})"
    arrays, fed = {}, {}
    for name, (shape, dtype) in declared.items():
        kind = _dtype(dtype)
        want = int(np.prod(shape)) * kind.itemsize
        if name not in given:
            arrays[name], fed[name] = np.zeros(shape, dtype=kind), "zeros"
            continue
        path = Path(given[name])
        size = path.stat().st_size if path.is_file() else None
        if size != want:
            return (
                {},
                {},
                f"{tool} capture: input {name} file {path} has {size} bytes, expected {want}",
            )
        raw = path.read_bytes()
        arrays[name] = np.frombuffer(raw, dtype=kind).reshape(shape)
        fed[name] = "sha256:" + hashlib.sha256(raw).hexdigest()
    return arrays, fed, None


def _dtype(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def _positional(argv: list[str]) -> list[str]:
    """The arguments that are neither flags nor the values of -n / -s."""
    found, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in VALUED:
            skip = True
        elif not arg.startswith("-"):
            found.append(arg)
    return found


def capture(tool: str, argv: list[str], settings: dict[str, Any]) -> int:
    neff_file = _option(argv, "-n", "--neff", "--neff-path")
    requested = _option(argv, "-s", "--session-file")
    if neff_file is None:
        print(f"{tool} capture: -n NEFF is required", file=sys.stderr)
        return 2
    if _unknown(argv, CAPTURE_FLAGS):
        print(f"{tool} capture: unknown flags {_unknown(argv, CAPTURE_FLAGS)}", file=sys.stderr)
        return 2
    try:
        where = place(settings, neff=neff_file)
    except PlacementError as error:
        print(f"{tool}: {error}", file=sys.stderr)
        return 1
    try:
        data = neff.read(neff_file, neff.NEFF_FORMAT)
    except neff.FakeFileError as error:
        print(f"{tool}: {error}", file=sys.stderr)
        return 1
    arrays, fed, problem = _inputs(tool, _positional(argv), data["inputs"])
    if problem:
        print(problem, file=sys.stderr)
        return 2
    save = "--save-output" in argv
    config.record_call(
        f"{tool}:device", ["capture", neff_file], ran_on=where.as_dict(), inputs=fed, save=save
    )
    if settings["run_error"]:
        print(f"{tool}: NRT_EXEC_ERROR: {settings['run_error']}", file=sys.stderr)
        return 1
    if save:
        for name, value in hardware.neff_outputs(data, arrays, settings["device_fault"]).items():
            written = f"{name}_output.bin"
            Path(written).write_bytes(value.tobytes())
            print(f'saved output "{name}" as "{written}"')
    if "--disable-profile" in argv:
        return 0
    nth = _option(argv, "--profile-nth-exec")
    target = ntff_path(requested or "profile.ntff", nth)
    history = len((config.home() / config.CALLS_NAME).read_text().splitlines())
    digest = hashlib.sha256(Path(neff_file).read_bytes()).hexdigest()
    (factor,) = hardware.noise(
        data["profile"], float(settings["noise_pp"]), f"{digest}:capture:{history}", 1
    )
    neff.write(
        target,
        neff.NTFF_FORMAT,
        {
            "neff": neff_file,
            "total_time": float(data["profile"].get("total_time", 0.0)) * factor,
            "exec": int(nth or 1),
            "inputs": fed,
            "nc_idx": where.core % (int(settings["cores_per_device"]) // where.lnc),
            "nd_idx": where.chip,
        },
    )
    print(f"profile written to {target}")
    return 0


def view(tool: str, argv: list[str], settings: dict[str, Any]) -> int:
    neff_file, session = _option(argv, "-n", "--neff-path"), _option(argv, "-s", "--session-file")
    if neff_file is None or session is None:
        print(f"{tool} view: -n NEFF and -s NTFF are required by the fake", file=sys.stderr)
        return 2
    if _option(argv, "--output-format") != "summary-json":
        print(f"{tool} view: the fake prints --output-format summary-json only", file=sys.stderr)
        return 2
    try:
        data = neff.read(neff_file, neff.NEFF_FORMAT)
        trace = neff.read(session, neff.NTFF_FORMAT)
    except neff.FakeFileError as error:
        print(f"{tool}: {error}", file=sys.stderr)
        return 1
    print(json.dumps({Path(neff_file).stem: summary(data, trace, settings, tool)}, indent=2))
    return 0


def main(tool: str, argv: list[str]) -> int:
    settings = config.load()
    config.record_call(tool, argv)
    if argv[:1] == ["--version"]:
        print(f"{tool} version {config.tools_version(settings)}")
        return 0
    if argv[:1] == ["capture"]:
        return capture(tool, argv[1:], settings)
    if argv[:1] == ["view"]:
        return view(tool, argv[1:], settings)
    print(f"{tool}: usage: capture|view -n NEFF -s NTFF ... (or --version)", file=sys.stderr)
    return 2
