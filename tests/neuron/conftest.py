"""Fixtures for the Trn2 path: an installed fake toolchain, candidate trees, targets.

The fake toolchain (kernelopt.testing.fake_trn2) stands in for the Neuron
SDK at the process boundary; the driver, gate, hosts and target are the real
classes. SSH tests reuse the loopback sshd of tests/hosts.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelopt.devices.neuron import NeuronGate
from kernelopt.hosts import Host, LocalHost, SSHHost
from kernelopt.neuron.target import NeuronTarget
from kernelopt.program import NeuronConfig
from kernelopt.testing.fake_trn2 import FakeTrn2

KERNELS = Path(__file__).resolve().parent / "kernels"
HOSTS_TESTS = Path(__file__).resolve().parents[1] / "hosts"


def _sshd_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "kernelopt_test_sshd_server", HOSTS_TESTS / "sshd_server.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake(tmp_path: Path) -> FakeTrn2:
    # The current SDK's layout (two environments) unless a test installs another.
    toolchain = FakeTrn2(tmp_path / "fake-trn2").install(sdk="current")
    toolchain.configure(monitor_period_s=0.1)
    return toolchain


@pytest.fixture
def make_tree(tmp_path: Path) -> Callable[..., Path]:
    """A candidate tree: ir/small/{workload.py,kernel.py}; ``kernel`` picks the source."""
    count = iter(range(1000))

    def build(kernel: str = "kernel.py") -> Path:
        tree = tmp_path / f"tree{next(count)}"
        folder = tree / "ir" / "small"
        folder.mkdir(parents=True)
        shutil.copy(KERNELS / "workload.py", folder / "workload.py")
        shutil.copy(KERNELS / kernel, folder / "kernel.py")
        return tree

    return build


@pytest.fixture
def make_target(fake: FakeTrn2, tmp_path: Path) -> Callable[..., NeuronTarget]:
    """A target on the fake; its environments are the fake's (two for the current SDK)."""

    def build(
        hosts: tuple[Host, ...] = (LocalHost(),), activate: Path | None = None, **settings: Any
    ) -> NeuronTarget:
        runtime = fake.runtime_activate_path
        if runtime != fake.activate_path:
            settings.setdefault("runtime_activate", str(runtime))
        config = NeuronConfig(activate=str(activate or fake.activate_path), **settings)
        return NeuronTarget(
            workload="ir/small/workload.py",
            kernel="ir/small/kernel.py",
            hosts=hosts,
            # Leftover compilers are looked for among this test's children only: the
            # machine's process table is shared with whatever else runs here.
            gate=NeuronGate(
                search_path=(str(fake.bin_dir),),
                timeout=20,
                process_table=f"ps -ww -o pid=,args= --ppid {os.getpid()} || true",
            ),
            results_dir=tmp_path / "results" / "run1",
            settings=config,
            python=sys.executable,
            poll_s=0.05,
            max_wait_s=0.0,
            lock_dir=str(tmp_path / "locks"),
        )

    return build


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    module = _sshd_module()
    reason = module.sshd_missing_reason()
    if reason:
        pytest.skip(f"SSH tests need a local OpenSSH server: {reason}")
    server = module.LoopbackSSHD(tmp_path_factory.mktemp("sshd"), ("trn-1",)).start()
    yield server
    server.stop()


@pytest.fixture
def ssh_host(sshd: Any) -> Iterator[SSHHost]:
    host = SSHHost("trn-1", config_path=sshd.ssh_config)
    yield host
    host.close()
