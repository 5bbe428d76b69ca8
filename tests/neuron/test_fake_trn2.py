"""The fake toolchain itself: inactive unless enabled, two SDK layouts, a device
that is not the screening model, and the documented output shapes."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kernelopt.devices.neuron import parse_neuron_ls, parse_neuron_monitor
from kernelopt.neuron.cli import fake_trn2_group
from kernelopt.testing.fake_trn2 import PYLIB, FakeTrn2, hardware

KERNELS = Path(__file__).resolve().parent / "kernels"


def _run(
    fake: FakeTrn2,
    *argv: str,
    extra: dict[str, str] | None = None,
    cwd: Path | None = None,
    runtime: bool = False,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **fake.env(runtime=runtime), **(extra or {})}
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=60, cwd=cwd)


def test_nothing_fake_is_importable_or_on_path_without_enabling_it() -> None:
    assert not any(str(PYLIB) in p for p in sys.path)
    for name in ("nrtpy", "neuronxcc", "nkipy"):
        assert importlib.util.find_spec(name) is None
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [sys.executable, "-c", "import nrtpy"], env=clean, capture_output=True, text=True
    )
    assert probe.returncode != 0


def test_env_prints_export_lines_that_enable_the_tools_in_a_shell(tmp_path: Path) -> None:
    home = tmp_path / "trn2"
    result = CliRunner().invoke(fake_trn2_group, ["env", "--home", str(home), "--sdk", "current"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("export PATH=")
    script = (
        f'eval "$FAKE_ENV"; neuron-ls -j; command -v neuron-explorer; '
        f'{sys.executable} -c "import nki.compiler.driver"; '
        f'. "{home}/activate-runtime"; {sys.executable} -c "import nrtpy"'
    )
    shell = subprocess.run(
        ["sh", "-c", script],
        env={**os.environ, "FAKE_ENV": result.output},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shell.returncode == 0, shell.stderr
    listing = shell.stdout[: shell.stdout.rindex("]") + 1]
    devices = parse_neuron_ls(listing, command="neuron-ls -j", host="local")
    assert [d["neuron_device"] for d in devices] == [0, 1]
    assert (home / "activate").read_text() == result.output


# What each layout ships, as the release notes say (docs/trn2.md, "SDK generations").
LAYOUTS = {
    # Before nki_standalone, with nkipy's predecessor (the fake's oldest layout).
    "2.22": ({"neuron-profile"}, {"neuronxcc.nki", "neuronpy.core.compile"}),
    "2.26": ({"neuron-profile"}, {"neuronxcc.nki", "neuronxcc.nki_standalone", "nkipy"}),
    "2.27": (
        {"neuron-profile", "neuron-explorer"},
        {"neuronxcc.nki", "nki", "neuronxcc.nki_standalone", "nkipy"},
    ),
    "2.30": (
        {"neuron-explorer"},
        {"nki", "nki.compiler.driver", "neuronxcc.nki_standalone", "nkipy"},
    ),
    "2.32": (
        {"neuron-explorer"},
        {"nki", "nki.compiler.driver", "neuronxcc.nki_standalone", "nkipy"},
    ),
}
MODULES = (
    "neuronxcc.nki",
    "nki",
    "nki.compiler.driver",
    "neuronxcc.nki_standalone",
    "nkipy",
    "neuronpy.core.compile",
)


@pytest.mark.parametrize("sdk", sorted(LAYOUTS))
def test_each_layout_ships_what_its_release_did_and_nrtpy_only_from_2_32(
    tmp_path: Path, sdk: str
) -> None:
    home = tmp_path / "trn2"
    result = CliRunner().invoke(fake_trn2_group, ["env", "--home", str(home), "--sdk", sdk])
    assert result.exit_code == 0, result.output
    fake = FakeTrn2(home)
    profilers, modules = LAYOUTS[sdk]
    on_path = {t for t in ("neuron-profile", "neuron-explorer") if (fake.bin_dir / t).exists()}
    assert on_path == profilers
    probe = (
        "import importlib, json\n"
        "found = []\n"
        f"for m in {MODULES!r} + ('nrtpy',):\n"
        "    try:\n        importlib.import_module(m)\n        found.append(m)\n"
        "    except ImportError:\n        pass\n"
        "print(json.dumps(found))"
    )
    done = _run(fake, sys.executable, "-c", probe)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == modules  # never nrtpy in the compile environment
    runtime = _run(fake, sys.executable, "-c", "import nrtpy", runtime=True)
    assert (runtime.returncode == 0) == (sdk == "2.32"), runtime.stderr
    assert (fake.runtime_activate_path != fake.activate_path) == (sdk == "2.32")


def test_nrtpy_next_to_the_nki_wheel_fails_as_the_docs_warn(fake: FakeTrn2) -> None:
    runtime = fake.env(runtime=True)["PYTHONPATH"]
    both = _run(
        fake,
        sys.executable,
        "-c",
        "import nrtpy",
        extra={"PYTHONPATH": fake.env()["PYTHONPATH"] + ":" + runtime},
    )
    assert both.returncode != 0
    assert "cannot be installed in the same Python environment" in both.stderr


def test_set_and_show_change_the_fakes_settings(tmp_path: Path) -> None:
    home = str(tmp_path / "trn2")
    runner = CliRunner()
    result = runner.invoke(
        fake_trn2_group, ["set", "--home", home, "compile_delay_s=2", 'busy={"0": 77}']
    )
    assert result.exit_code == 0, result.output
    shown = json.loads(runner.invoke(fake_trn2_group, ["show", "--home", home]).output)
    assert shown["compile_delay_s"] == 2 and shown["busy"] == {"0": 77}
    assert shown["sdk"] == "2.27"
    bad = runner.invoke(fake_trn2_group, ["set", "--home", home, "colour=blue"])
    assert bad.exit_code != 0 and "unknown fake Trn2 settings ['colour']" in bad.output
    assert runner.invoke(fake_trn2_group, ["set", "--home", home, "oops"]).exit_code != 0
    wrong = runner.invoke(fake_trn2_group, ["set", "--home", home, "sdk=newest"])
    assert (
        wrong.exit_code != 0 and "sdk must be one of 2.22, 2.26, 2.27, 2.30, 2.32" in wrong.output
    )


def test_neuron_ls_new_format_wraps_the_list_and_old_format_refuses_the_new_flag(
    fake: FakeTrn2,
) -> None:
    new = _run(fake, "neuron-ls", "--output-format", "json")
    doc = json.loads(new.stdout)
    assert isinstance(doc, dict) and doc["instance_type"] == "trn2.48xlarge"
    # Logical ids at the host's LNC (Trn2's default 2: four per device), as neuron-ls.rst.
    listed = parse_neuron_ls(new.stdout, command="neuron-ls", host="h")
    assert [d["neuroncore_ids"] for d in listed] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert {(d["nc_count"], d["logical_neuroncore_config"]) for d in listed} == {(4, 2)}
    fake.configure(neuron_ls_format="old")
    assert _run(fake, "neuron-ls", "--output-format", "json").returncode != 0
    assert isinstance(json.loads(_run(fake, "neuron-ls", "--json-output").stdout), list)


def test_neuron_monitor_streams_documents_the_gate_can_read(fake: FakeTrn2) -> None:
    fake.configure(busy={"1": 4242}, monitor_period_s=0.05)
    env = {**os.environ, **fake.env()}
    process = subprocess.Popen(["neuron-monitor"], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first, second = process.stdout.readline(), process.stdout.readline()
    finally:
        process.kill()
        process.wait()
    usage = parse_neuron_monitor(first, host="h")
    assert usage[4] == 87.5 and 0 not in usage
    assert json.loads(second)["neuron_hardware_info"]["neuron_device_type"] == "trainium2"
    assert fake.monitor_pids == [process.pid]


def _ir(kernel: str = "kernel.py") -> dict:
    path = KERNELS / kernel
    return {
        "kind": "nki",
        "kernel": str(path),
        "source": path.read_text(),
        "func": None,
        "inputs": {"lhsT": [[256, 128], "bfloat16"], "rhs": [[256, 512], "bfloat16"]},
        "outputs": [[[128, 512], "bfloat16", "output"]],
        "api": "test",
    }


def _compile(
    fake: FakeTrn2, out: Path, kernel: str = "kernel.py"
) -> subprocess.CompletedProcess[str]:
    source = out / "k.json"
    source.write_text(json.dumps(_ir(kernel)))
    return _run(
        fake,
        "neuronx-cc",
        "compile",
        str(source),
        "--framework",
        "XLA",
        "--target",
        "trn2",
        "--output",
        str(out / "k.neff"),
        cwd=out,
    )


def test_capture_and_view_follow_the_profilers_documented_behaviour(
    fake: FakeTrn2, tmp_path: Path
) -> None:
    assert _compile(fake, tmp_path).returncode == 0
    neff, ntff = str(tmp_path / "k.neff"), str(tmp_path / "k.ntff")
    # Like the runtime, capture needs no binding: every core is visible, it runs on core 0.
    unbound = _run(fake, "neuron-explorer", "capture", "-n", neff, "-s", ntff)
    assert unbound.returncode == 0, unbound.stderr
    (where,) = [c["ran_on"] for c in fake.calls("neuron-explorer:device")]
    assert (where["chip"], where["core"], where["bound"]) == (0, 0, False)
    Path(ntff).unlink()
    bound = {"NEURON_RT_VISIBLE_CORES": "5"}  # LNC=2: device 1's second core
    nth = ["--profile-nth-exec=2"]
    assert _run(fake, "neuron-explorer", "capture", "-n", neff, "-s", ntff, *nth, extra=bound)
    # The trace of the second execution goes to NAME_exec_2.ntff.
    written = tmp_path / "k_exec_2.ntff"
    assert written.exists() and not Path(ntff).exists()
    view = _run(
        fake,
        "neuron-explorer",
        "view",
        "-n",
        neff,
        "-s",
        str(written),
        "--output-format",
        "summary-json",
    )
    doc = json.loads(view.stdout)
    (key,) = doc
    flat = doc[key]
    assert key == "k"
    percents = [v for k, v in flat.items() if k.endswith("_percent") and v != -1]
    # Fractions, as Explorer's public summary-json outputs print them.
    assert percents and all(0 <= v <= 1 for v in percents) and max(percents) > 0.01
    assert flat["spill_save_bytes"] == -1 and flat["hfu_estimated_percent"] == -1
    assert flat["total_time"] > 0 and (flat["nd_idx"], flat["nc_idx"]) == (1, 1)
    bad = _run(fake, "neuron-explorer", "capture", "-n", neff, "--no-such-flag", extra=bound)
    assert bad.returncode == 2 and "unknown flags" in bad.stderr
    # The setting standing for a release that printed percent.
    fake.configure(explorer_percent_unit="percent")
    args = ["view", "-n", neff, "-s", str(written), "--output-format", "summary-json"]
    (again,) = json.loads(_run(fake, "neuron-explorer", *args).stdout).values()
    assert again["tensor_engine_active_time_percent"] == pytest.approx(
        100 * flat["tensor_engine_active_time_percent"]
    )


def test_capture_takes_raw_input_files_and_saves_the_outputs_as_the_public_runner_reads_them(
    fake: FakeTrn2, tmp_path: Path
) -> None:
    import ml_dtypes
    import numpy as np

    assert _compile(fake, tmp_path).returncode == 0
    neff = str(tmp_path / "k.neff")
    rng = np.random.default_rng(0)
    arrays = {
        "lhsT": rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16),
        "rhs": rng.standard_normal((256, 512)).astype(ml_dtypes.bfloat16),
    }
    words = []
    for name, value in arrays.items():
        value.tofile(tmp_path / f"{name}.bin")
        words += [name, str(tmp_path / f"{name}.bin")]
    bound = {"NEURON_RT_VISIBLE_CORES": "0"}
    flags = ["--disable-profile", "--save-output", "--num-exec=1", "--profile-nth-exec=0"]
    done = _run(
        fake, "neuron-explorer", "capture", "-n", neff, *flags, *words, extra=bound, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    ((name, file),) = re.findall(r'saved output "([^"]+)" as "([^"]+)"', done.stdout)
    got = np.fromfile(tmp_path / file, dtype=ml_dtypes.bfloat16).reshape(128, 512)
    as32 = {k: v.astype(np.float32) for k, v in arrays.items()}
    want = as32["lhsT"].T @ as32["rhs"]
    assert name == "output" and np.allclose(got.astype(np.float32), want, atol=0.1, rtol=0.02)
    assert not list(tmp_path.glob("*.ntff"))  # --disable-profile: no trace
    # A .npy file (128 header bytes more) is not the input's raw bytes: refused.
    np.save(tmp_path / "lhsT.npy", arrays["lhsT"])
    npy = ["lhsT", str(tmp_path / "lhsT.npy")]
    refused = _run(
        fake, "neuron-explorer", "capture", "-n", neff, *flags, *npy, extra=bound, cwd=tmp_path
    )
    assert refused.returncode == 2 and "expected 65536" in refused.stderr
    # The device's fault shows in the saved outputs too.
    fake.configure(device_fault={"index": [3, 7], "value": 99.0})
    done = _run(
        fake, "neuron-explorer", "capture", "-n", neff, *flags, *words, extra=bound, cwd=tmp_path
    )
    faulty = np.fromfile(tmp_path / file, dtype=ml_dtypes.bfloat16).reshape(128, 512)
    assert float(faulty[3, 7]) == 99.0


@pytest.mark.parametrize(
    ("kernel", "settings", "message"),
    [
        ("kernel_psum_oom.py", {}, "[NCC_EOOM001]"),
        ("kernel.py", {"compile_error": "Internal tensorizer error"}, "Internal tensorizer error"),
    ],
)
def test_neuronx_cc_fails_like_the_real_compiler(
    fake: FakeTrn2, tmp_path: Path, kernel: str, settings: dict[str, str], message: str
) -> None:
    fake.configure(**settings)
    result = _compile(fake, tmp_path, kernel)
    assert result.returncode == 1 and message in result.stderr
    assert not (tmp_path / "k.neff").exists()
    # Like the real compiler, it keeps its log in the working directory.
    assert message in (tmp_path / "log-neuron-cc.txt").read_text()


def test_the_fake_device_is_not_the_screening_model() -> None:
    import numpy as np

    from kernelopt.sim import DEFAULT_PARAMS, run_kernel
    from kernelopt.workload import load_workload, make_inputs

    applied = [k for k in hardware.HIDDEN_OVERRIDES if getattr(DEFAULT_PARAMS, k, None) is not None]
    assert applied, "no hidden override applies to the simulator's parameters any more"
    assert hardware.params() != DEFAULT_PARAMS
    workload = load_workload(KERNELS / "workload.py")
    inputs = make_inputs(workload.input_specs, 0)
    screening = run_kernel(KERNELS / "kernel.py", inputs, compute=False).profile
    device = hardware.model_profile(KERNELS / "kernel.py", None, inputs)
    assert abs(device["total_time"] / screening["total_time"] - 1) > 0.05
    # Same numbers, though: the device computes the kernel, stored in bf16.
    (out,) = hardware.execute_kernel(KERNELS / "kernel.py", None, inputs, np.dtype("float32"))
    want = workload.f_numpy(**{k: v.astype(np.float32) for k, v in inputs.items()})
    assert np.allclose(out, want, atol=1e-3, rtol=1e-3)


def test_measurement_noise_is_about_five_hundredths_of_a_point_of_mfu() -> None:
    profile = {"mfu_estimated_percent": 60.0}
    factors = hardware.noise(profile, 0.05, "seed", 4000)
    spread_pp = statistics.pstdev([60.0 / f for f in factors])
    assert 0.04 < spread_pp < 0.06
    assert hardware.noise(profile, 0.05, "seed", 5) == factors[:5]  # seeded
    assert hardware.noise(profile, 0.05, "other", 5) != factors[:5]


BAREMETAL = """
import json, sys
import ml_dtypes, numpy as np
from neuronxcc.nki import baremetal, benchmark
sys.path.insert(0, sys.argv[1])
from kernel_beta1 import small_matmul
rng = np.random.default_rng(0)
lhsT = rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16)
rhs = rng.standard_normal((256, 512)).astype(ml_dtypes.bfloat16)
out = baremetal(small_matmul, save_neff_name="file.neff", save_trace_name="profile.ntff",
                additional_compile_opt="--logical-nc-config=2")(lhsT, rhs)
want = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
bench = benchmark(warmup=2, iters=8)(small_matmul)
bench(lhsT, rhs)
latency = bench.benchmark_result.nc_latency
print(json.dumps({
    "dtype": str(out.dtype), "close": bool(np.allclose(out.astype(np.float32), want, atol=1, rtol=0.05)),
    "p": [latency.get_latency_percentile(p) for p in (0, 50, 99, 100)],
}))
"""


def test_beta1_baremetal_and_benchmark_run_the_kernel_on_the_bound_core(tmp_path: Path) -> None:
    fake = FakeTrn2(tmp_path / "fake").install(sdk="2.26")
    bound = {"NEURON_RT_VISIBLE_CORES": "4", "NEURON_LOGICAL_NC_CONFIG": "2"}
    done = _run(fake, sys.executable, "-c", BAREMETAL, str(KERNELS), extra=bound, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["close"] and found["dtype"] == "bfloat16"
    p0, p50, p99, p100 = found["p"]
    assert 0 < p0 <= p50 <= p99 <= p100 < 1e4  # microseconds
    assert (tmp_path / "file.neff").is_file() and (tmp_path / "profile.ntff").is_file()
    runs = fake.calls("neuronxcc.nki")
    assert [r["args"][:2] for r in runs] == [["baremetal", "1"], ["benchmark", "10"]]
    assert all(r["ran_on"]["chip"] == 1 and r["ran_on"]["core"] == 4 for r in runs)
    # The trace is the profiler's to read: one top-level key, device time in total_time.
    view = _run(
        fake,
        "neuron-profile",
        "view",
        "-n",
        "file.neff",
        "-s",
        "profile.ntff",
        "--output-format",
        "summary-json",
        cwd=tmp_path,
    )
    (summary,) = json.loads(view.stdout).values()
    assert 0 < summary["total_time"] < p0 / 1e6  # neuron-bench adds host-device transfers
