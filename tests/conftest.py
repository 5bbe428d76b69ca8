"""Shared fixtures for the loop tests: benchmark repositories and an in-process CLI."""

from __future__ import annotations

import fcntl
import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from benchmarks_support.gitrepo import BenchRepo, Cli, RepoFactory, build_bench_repo

# The end-to-end cases: whole runs on the fake Trn2 toolchain, kill-and-resume
# matrices, property sweeps of the CLI, long searches. A bare `pytest` (the README's
# test command) leaves them out so it stays under five minutes on two cores;
# `pytest -m slow` runs just them, a path or `-m` of your own runs what it names,
# and .ci/run runs both suites.
END_TO_END = (
    "tests/neuron_runs/",
    "tests/test_resume.py",
    "tests/reliability/test_kills_and_concurrency.py",
    "tests/reliability/test_hostile_inputs.py::test_any_try_ends_in_a_documented_exit",
    "tests/reliability/test_hostile_inputs.py::test_any_program_and_tag_end_in_a_documented_exit",
    "tests/proposers/test_nki.py::test_a_long_run_never_repeats_a_signature_or_a_kernel",
    "tests/proposers/test_nki.py::test_after_a_fruitless_sweep_round_it_moves_several_knobs_at_once",
    "tests/neuron/test_builds.py",
    "tests/neuron/test_target_ssh.py",
    "tests/gated/test_runs_on_devices.py",
    "tests/ray_cluster/test_run.py",
    "tests/ray_cluster/test_executor.py",
    "tests/agents/test_agent_driver.py",
    "tests/report/test_report_browser.py",
    "tests/proposers/test_evidence.py::test_a_catastrophic_setting_is_not_measured_again_once_learnt",
    "tests/neuron/test_target_local.py::test_compiles_overlap_measurements_and_the_device_measures",
    "tests/neuron/test_target_local.py::test_the_host_is_probed_once_for_many_measurements",
    "tests/neuron/test_target_local.py::test_both_neuron_ls_formats_lead_to_a_measurement",
)

# Variant-parametrized cases of ActivationReduce combined with other rewrites: the quick
# suite keeps it alone and every other rewrite alone (and test_fused_reduce.py runs the
# combinations on the two workloads it was built for); the rest run with -m slow.
SLOW_VARIANTS = ("+ActivationReduce]",)
FUSED_REDUCE_TESTS = "tests/ir/test_fused_reduce.py"
# Contract cases whose other parameters stay quick: the SSH host (the hostile-input
# cases keep it in the quick suite) and the neuron target (test_target_local.py).
SLOW_PARAMS = (
    ("tests/hosts/test_hosts_contract.py", "[ssh]"),
    ("tests/targets/test_target_contract.py", "[nki-neuron"),
)


_QUICK = pytest.StashKey[bool]()


def _quick_suite(config: pytest.Config) -> bool:
    """True for a bare `pytest`: no paths and no -m given."""
    return config.args_source is not pytest.Config.ArgsSource.ARGS and not config.option.markexpr


def pytest_configure(config: pytest.Config) -> None:
    if _quick_suite(config):
        config.option.markexpr = "not slow"
        config.stash[_QUICK] = True


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.stash.get(_QUICK, False):
        return "quick suite: end-to-end cases (marked slow) left out; `pytest -m slow` runs them"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        combination = any(v in item.nodeid for v in SLOW_VARIANTS)
        param = any(item.nodeid.startswith(f) and p in item.nodeid for f, p in SLOW_PARAMS)
        if (
            item.nodeid.startswith(END_TO_END)
            or param
            or (combination and not item.nodeid.startswith(FUSED_REDUCE_TESTS))
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def quiet_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    """No benchmark noise or signalling unless a test asks for it."""
    monkeypatch.delenv("BENCH_NOISE", raising=False)
    monkeypatch.delenv("BENCH_PID_FILE", raising=False)


@pytest.fixture
def bench_repo(tmp_path: Path, quiet_bench: None) -> RepoFactory:
    """Build committed repositories with bench.py, knobs.json {"X": x0} and one program."""
    counter = itertools.count()

    def build(x0: Any = 100, **options: Any) -> BenchRepo:
        return build_bench_repo(tmp_path / f"repo{next(counter)}", x0, **options)

    return build


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, quiet_bench: None) -> Cli:
    return Cli(monkeypatch)


# The machine's process table is shared by the two pytest-xdist workers. A test that
# starts a stand-in leftover compiler (a process named neuronx-cc) makes every gate and
# doctor that reads the table meanwhile, in the other worker, see a leftover compiler
# too. So each test holds a shared lock on this file from its setup to its teardown
# (module fixtures its setup starts included), and a test marked
# ``process_table_to_itself`` holds it exclusively: it runs while no other test does.
PROCESS_TABLE_LOCK = Path(tempfile.gettempdir()) / "kernelopt-tests-process-table.lock"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    alone = item.get_closest_marker("process_table_to_itself") is not None
    with PROCESS_TABLE_LOCK.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
