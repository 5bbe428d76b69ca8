"""The neuron path through a real OpenSSH server on loopback: the gate, the
shipped tree, the driver and the artifact copies all go through SSHHost."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernelopt.hosts import SSHHost
from kernelopt.neuron.target import NeuronTarget
from kernelopt.testing.fake_trn2 import FakeTrn2


def test_a_candidate_is_measured_on_an_ssh_host(
    fake: FakeTrn2,
    ssh_host: SSHHost,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    fake.configure(neuron_ls_format="old")
    target = make_target(
        hosts=(ssh_host,), pipeline_options=("enable-instruction-scheduling=false",)
    )
    m = target.measure(make_tree())
    compiles = len(fake.calls("nki.compiler.driver"))

    assert m.status == "ok", m.error
    assert m.host == "trn-1" and m.device == "neuron:0@0"
    assert m.metrics["mfu"] > 0 and "spill_reload_bytes" not in m.profile
    assert m.extra["timing"] == "device" and m.extra["sdk"]["environments"] == "split"
    assert all(Path(p).is_file() for p in m.artifacts.values())
    assert Path(m.artifacts["ntff"]).parent == target.results_dir / m.extra["key"]
    to_neff = fake.calls("nki.compiler.driver")[-1]
    assert to_neff["args"] == ["compile_bir_to_neff", "enable-instruction-scheduling=false"]
    # Measured again (BEST beside a challenger): its NEFF goes back over SSH, no compile.
    again = target.measure(make_tree())
    assert again.status == "ok" and again.extra["neff_reused_from"] == m.extra["key"]
    assert len(fake.calls("nki.compiler.driver")) == compiles


def test_a_compile_failure_over_ssh_carries_the_compilers_message(
    fake: FakeTrn2,
    ssh_host: SSHHost,
    make_tree: Callable[..., Path],
    make_target: Callable[..., NeuronTarget],
) -> None:
    fake.configure(compile_error="[NCC_EOOM002] Out of memory in sbuf")
    m = make_target(hosts=(ssh_host,)).measure(make_tree())
    assert m.status == "failed"
    assert "Out of memory in sbuf" in m.error and m.host == "trn-1"
