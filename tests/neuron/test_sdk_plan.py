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
