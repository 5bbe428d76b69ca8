"""The simulated nki modules exist for the kernel only."""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

KERNEL = """
import nki
import nki.isa as nisa
import nki.language as nl
from nki.language import shared_hbm

@nki.jit
def k(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_no_nki_module_leaks_into_sys_modules(kernel_file):
    path, _ = kernel_file(KERNEL)
    before = {name for name in sys.modules if name == "nki" or name.startswith("nki.")}
    run = run_kernel(path, {"a": np.ones((8, 4), np.float32)})
    after = {name for name in sys.modules if name == "nki" or name.startswith("nki.")}
    assert before == after
    np.testing.assert_array_equal(run.outputs, np.ones((8, 4)))


def test_an_installed_nki_is_neither_used_nor_touched(kernel_file, monkeypatch):
    real = types.ModuleType("nki")
    real.jit = lambda f: pytest.fail("the kernel used the installed nki")
    monkeypatch.setitem(sys.modules, "nki", real)
    path, _ = kernel_file(KERNEL)
    run = run_kernel(path, {"a": np.full((8, 4), 2.0, np.float32)})
    assert sys.modules["nki"] is real and not hasattr(real, "language")
    np.testing.assert_array_equal(run.outputs, np.full((8, 4), 2.0))


def test_unknown_nki_submodule_is_an_import_error_at_its_line(kernel_file):
    path, line = kernel_file("import nki.compiler  # <-\n")
    with pytest.raises(SimError) as err:
        run_kernel(path, {})
    assert (err.value.kind, err.value.line) == ("exception", line)
    assert "nki.compiler is not part of the simulated nki subset" in err.value.message


def test_other_imports_still_work(kernel_file):
    # The kernel imports math and uses it to size its output: 2 x isqrt(16) = 2 x 4.
    source = KERNEL.replace("import nki\n", "import nki\nimport math\n", 1).replace(
        "out = nl.ndarray(a.shape,", "out = nl.ndarray((a.shape[0], math.isqrt(16)),"
    )
    path, _ = kernel_file(source)
    run = run_kernel(path, {"a": np.full((2, 4), 3.0, np.float32)})
    np.testing.assert_array_equal(run.outputs, np.full((2, 4), 3.0))


def test_a_framework_import_beside_the_kernel_loads_where_it_is_not_installed(kernel_file):
    # A kernel file importing Neuron's torch binding (as the nki-samples softmax tutorial
    # does) or torch for its reference runs; neither is installed on this machine.
    if importlib.util.find_spec("torch_xla") is not None:
        pytest.skip("torch_xla is installed here")
    source = "import torch_xla.core.xla_model as xm\nfrom torch_neuronx import trace\n" + KERNEL
    if importlib.util.find_spec("torch") is None:
        source = "import torch\nimport torch.nn.functional as F\n" + source
    if importlib.util.find_spec("loguru") is None:  # the rotary tutorial's host-side imports
        source = "from loguru import logger\n" + source
    if importlib.util.find_spec("transformers") is None:
        source = "from transformers.models.llama import modeling_llama\n" + source
    path, _ = kernel_file(source)
    run = run_kernel(path, {"a": np.full((2, 4), 5.0, np.float32)})
    np.testing.assert_array_equal(run.outputs, np.full((2, 4), 5.0))


def test_using_an_absent_framework_fails_at_its_line(kernel_file):
    if importlib.util.find_spec("torch_xla") is not None:
        pytest.skip("torch_xla is installed here")
    source = KERNEL.replace("import nki\n", "import nki\nimport torch_xla.core.xla_model as xm\n")
    source = source.replace("    return out\n", "    xm.xla_device()  # <-\n    return out\n")
    path, line = kernel_file(source)
    with pytest.raises(SimError) as err:
        run_kernel(path, {"a": np.ones((2, 4), np.float32)})
    assert err.value.line == line
    assert "torch_xla is not installed here" in err.value.message


def test_a_missing_module_outside_the_frameworks_is_still_an_import_error(kernel_file):
    path, line = kernel_file("import kernelopt_no_such_module  # <-\n")
    with pytest.raises(SimError) as err:
        run_kernel(path, {})
    assert (err.value.kind, err.value.line) == ("exception", line)
    assert "kernelopt_no_such_module" in err.value.message


def test_a_kernel_file_may_declare_dataclasses_and_leaves_no_module_behind(kernel_file):
    # The public flash-attention kernel takes its tile sizes from a frozen dataclass;
    # dataclasses look the class's module up in sys.modules while it runs.
    source = KERNEL.replace(
        "@nki.jit",
        "from dataclasses import dataclass\n\n"
        "@dataclass(frozen=True)\nclass Config:\n    scale: float = 2.0\n\n@nki.jit",
    ).replace(
        "    nisa.dma_copy(dst=out, src=t)",
        "    assert Config().scale == 2.0\n    nisa.dma_copy(dst=out, src=t)",
    )
    path, _ = kernel_file(source)
    before = set(sys.modules)
    run = run_kernel(path, {"a": np.full((2, 4), 3.0, np.float32)})
    np.testing.assert_array_equal(run.outputs, np.full((2, 4), 3.0))
    assert set(sys.modules) == before
