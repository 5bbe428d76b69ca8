"""Choosing the SDK path from the probes: current where present, else older."""

from __future__ import annotations

from typing import Any

from kernelopt.neuron.sdk import plan


def _probe(modules: dict[str, Any], tools: dict[str, str | None]) -> dict[str, Any]:
    return {
        "modules": {
            m: v if isinstance(v, dict) else {"ok": True, "version": v} for m, v in modules.items()
        },
        "tools": {t: {"path": p, "version": "1.0" if p else None} for t, p in tools.items()},
    }


MISSING = {"ok": False, "error": "ModuleNotFoundError: No module named 'x'"}


def test_the_current_sdk_is_preferred_and_split_environments_are_recorded() -> None:
    compiling = _probe(
        {
            "nki.compiler.driver": "0.2",
            "neuronxcc.nki_standalone": "2.21",
            "nkipy.runtime.execute": "0.1",
            "nrtpy": MISSING,
        },
        {"neuronx-cc": "/bin/neuronx-cc"},
    )
    running = _probe(
        {"nrtpy": "2.28", "nki.compiler.driver": MISSING},
        {"neuron-explorer": "/bin/neuron-explorer", "neuron-profile": "/bin/neuron-profile"},
    )
    found = plan(compiling, running, split=True)
    assert (found.compile_api, found.runtime, found.profiler) == (
        "nki.compiler",
        "nrtpy",
        "neuron-explorer",
    )
    assert found.environments == "split" and found.baseline == "nkipy"
    assert found.compile_problem() is None and found.runtime_problem() is None


def test_an_older_sdk_falls_back_to_nki_standalone_and_neuron_profile() -> None:
    both = _probe(
        {"nki.compiler.driver": MISSING, "neuronxcc.nki_standalone": "2.21", "nrtpy": "2.20"},
        {"neuron-explorer": None, "neuron-profile": "/bin/neuron-profile", "neuronx-cc": "/x"},
    )
    found = plan(both, both, split=False)
    assert (found.compile_api, found.profiler, found.environments) == (
        "nki_standalone",
        "neuron-profile",
        "one",
    )
    assert found.baseline is None


def test_what_is_missing_is_said_with_the_fix() -> None:
    conflict = {
        "ok": False,
        "error": "ImportError: nrtpy: the standalone nrtpy wheel and the nki wheel cannot",
    }
    one = _probe(
        {"nki.compiler.driver": MISSING, "neuronxcc.nki_standalone": MISSING, "nrtpy": conflict},
        {"neuron-explorer": None, "neuron-profile": None},
    )
    found = plan(one, one, split=False)
    assert "no NKI compiler" in (found.compile_problem() or "")
    runtime = found.runtime_problem() or ""
    assert "device.neuron.runtime_activate" in runtime and "nki wheel cannot" in runtime
    assert any("no profiler" in p for p in found.problems)


def test_without_nrtpy_the_capture_path_is_taken_and_the_generation_inferred() -> None:
    absent = {"ok": False, "error": "ModuleNotFoundError: No module named 'nrtpy'"}
    older_driver = {
        "ok": True,
        "version": "0.2",
        "shapes": {"compile_bir_to_neff": ["opts", "bir", "a", "b", "c", "input_output_aliases"]},
    }
    one = _probe(
        {"nki": "0.2", "nki.compiler.driver": older_driver, "nrtpy": absent},
        {"neuron-explorer": "/bin/neuron-explorer", "neuron-profile": None},
    )
    found = plan(one, one, split=False)
    assert (found.path, found.generation, found.runtime) == ("capture", "2.30-2.31", None)
    assert found.runtime_problem() is None
    assert found.shapes["nki.compiler.driver.compile_bir_to_neff"][-1] == "input_output_aliases"
    beta1 = _probe(
        {"neuronxcc.nki": "2.21", "neuronxcc.nki_standalone": "2.21", "nrtpy": absent},
        {"neuron-profile": "/bin/neuron-profile", "neuron-explorer": None},
    )
    assert plan(beta1, beta1, split=False).generation == "2.22-2.26"


def test_a_broken_nrtpy_is_reported_not_worked_around_and_a_forced_path_wins() -> None:
    conflict = {"ok": False, "error": "ImportError: nrtpy: the nki wheel cannot share"}
    one = _probe(
        {"nki.compiler.driver": "0.3", "nrtpy": conflict},
        {"neuron-explorer": "/bin/neuron-explorer"},
    )
    assert plan(one, one, split=False).path is None
    assert "nki wheel cannot share" in (plan(one, one, split=False).runtime_problem() or "")
    forced = plan(one, one, split=False, forced="capture")
    assert (forced.path, forced.path_chosen) == ("capture", "forced (device.neuron.sdk_path)")
    assert forced.runtime_problem() is None
    absent = {"ok": False, "error": "ModuleNotFoundError: No module named 'nrtpy'"}
    none = _probe({"nki.compiler.driver": "0.3", "nrtpy": absent}, {"neuron-explorer": "/x"})
    wants = plan(none, none, split=False, forced="nrtpy")
    assert wants.path == "nrtpy" and "sdk_path nrtpy" in (wants.runtime_problem() or "")


BAREMETAL = {
    "ok": True,
    "version": "2.21",
    "shapes": {"baremetal": ["kernel", "**kwargs"], "benchmark": ["kernel", "**kwargs"]},
}
NO_NRTPY = {"ok": False, "error": "ModuleNotFoundError: No module named 'nrtpy'"}


def test_a_host_without_the_nki_namespace_takes_the_baremetal_path() -> None:
    beta1 = _probe(
        {"neuronxcc.nki": BAREMETAL, "neuronxcc.nki_standalone": "2.21", "nrtpy": NO_NRTPY},
        {"neuron-profile": "/bin/neuron-profile", "neuron-explorer": None},
    )
    found = plan(beta1, beta1, split=False)
    assert (found.path, found.generation, found.namespaces) == (
        "baremetal",
        "2.22-2.26",
        ("neuronxcc",),
    )
    assert found.baremetal and found.runtime_problem() is None
    assert found.route("neuronxcc") == ("baremetal", "neuronxcc.nki.baremetal")
    # Without nki_standalone the kernels still compile: inside baremetal.
    bare = _probe({"neuronxcc.nki": BAREMETAL, "nrtpy": NO_NRTPY}, {"neuron-profile": "/x"})
    alone = plan(bare, bare, split=False)
    assert alone.compile_api is None and alone.compile_problem() is None
    assert alone.path == "baremetal"


def test_both_namespaces_keep_capture_for_nki_kernels_and_baremetal_for_beta1() -> None:
    both = _probe(
        {
            "nki": "0.1",
            "neuronxcc.nki": BAREMETAL,
            "neuronxcc.nki_standalone": "2.21",
            "nrtpy": NO_NRTPY,
            "neuronpy.core.compile": "0.1",
        },
        {"neuron-explorer": "/bin/neuron-explorer"},
    )
    found = plan(both, both, split=False)
    assert (found.path, found.generation) == ("capture", "2.27-2.29")
    assert found.namespaces == ("nki", "neuronxcc") and found.baseline == "neuronpy"
    assert found.route("nki") == ("capture", "nki_standalone")
    assert found.route("neuronxcc") == ("baremetal", "neuronxcc.nki.baremetal")


def test_a_forced_baremetal_path_without_it_says_what_is_missing() -> None:
    nki_only = _probe(
        {"nki": "0.1", "nki.compiler.driver": "0.2", "nrtpy": NO_NRTPY},
        {"neuron-explorer": "/bin/neuron-explorer"},
    )
    forced = plan(nki_only, nki_only, split=False, forced="baremetal")
    assert forced.path == "baremetal" and not forced.baremetal
    assert "neuronxcc.nki.baremetal" in (forced.runtime_problem() or "")
    assert forced.route("nki") == (None, None)
