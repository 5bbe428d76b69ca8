"""``--disable-dge``: DMAs carry descriptors the host computed before the run, whether
the option comes from the command line or from the ``NEURON_CC_FLAGS`` a kernel sets
at import (as the CS152 lab kernels and AccelOpt's runner compile)."""

from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel
from kernelopt.sim.chips import chip_params
from kernelopt.sim.compiler import compiler_options

# Sixteen small loads and stores; the first load and the last store each sit alone on
# the critical path, so what a transfer's fixed latency costs shows.
ROWS = """
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl
    {preamble}

    @nki.jit
    def rows(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.sequential_range(16):
            t = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=t)
        return out
"""


def _run(tmp_path, args=(), preamble=""):
    path = tmp_path / "rows.py"
    path.write_text(textwrap.dedent(ROWS.format(preamble=preamble)))
    x = np.arange(2048 * 64, dtype=np.float32).reshape(2048, 64)
    run = run_kernel(path, {"x": x}, compiler_args=args, params=chip_params("trn1"))
    np.testing.assert_array_equal(run.outputs, x)
    return run


def test_disable_dge_is_read_wherever_it_is_spelled():
    assert compiler_options(()).descriptor_generation
    assert not compiler_options((" --disable-dge ",)).descriptor_generation
    assert not compiler_options(("--disable-dge --logical-nc-config=1",)).descriptor_generation
    assert compiler_options(("--disable-dge", "--enable-dge")).descriptor_generation
    # Other options that merely contain the words are not it.
    assert compiler_options(("--internal-disable-dge-levels=io",)).descriptor_generation


def test_with_dge_disabled_every_static_dma_has_precomputed_descriptors(tmp_path):
    default, disabled = _run(tmp_path), _run(tmp_path, ("--disable-dge",))
    dmas = [ins for ins in disabled.trace if ins.engine == "dma"]
    assert len(dmas) == 32 and all(ins.precomputed_descriptors for ins in dmas)
    assert not any(ins.precomputed_descriptors for ins in default.trace if ins.engine == "dma")
    # Trn1 generates descriptors in software by default: 1.3 us a transfer and a serial
    # 0.2 us turn at the generator, against the 0.6 us of a pre-computed one. At least
    # the first load and the last store save that on the critical path.
    saved = default.profile["total_time"] - disabled.profile["total_time"]
    assert saved >= 2 * (1.3 - 0.6) * 1e-6


def test_a_kernel_sets_its_own_flags_and_they_stay_with_it(tmp_path, monkeypatch):
    monkeypatch.delenv("NEURON_CC_FLAGS", raising=False)
    monkeypatch.setenv("KERNELOPT_TEST_SETTING", "before")
    preamble = (
        'import os\nos.environ["NEURON_CC_FLAGS"] = " --disable-dge "\n'
        'os.environ["KERNELOPT_TEST_SETTING"] = "after"'
    )
    own = _run(tmp_path, preamble=textwrap.indent(preamble, "    ").lstrip())
    given = _run(tmp_path, ("--disable-dge",))
    assert own.profile["total_time"] == pytest.approx(given.profile["total_time"])
    # What the kernel set did not leak, and what it changed came back.
    assert "NEURON_CC_FLAGS" not in os.environ
    assert os.environ["KERNELOPT_TEST_SETTING"] == "before"


def test_a_bad_option_in_the_kernels_flags_names_them(tmp_path):
    preamble = 'import os\nos.environ["NEURON_CC_FLAGS"] = "--enable-instruction-scheduling=maybe"'
    with pytest.raises(SimError, match="NEURON_CC_FLAGS: enable-instruction-scheduling"):
        _run(tmp_path, preamble=textwrap.indent(preamble, "    ").lstrip())
