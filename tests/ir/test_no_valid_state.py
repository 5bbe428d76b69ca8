"""A workload with no valid knob state: every command says which rule breaks.

A matmul of a bf16 and an fp32 input, both read as is, breaks a rule no knob changes
(nc_matmul takes one dtype for both, and no instruction writes either to cast it). The IR still builds and shows; sampling names the
rule; ``ir init`` and ``kernelopt init`` stop with it and write nothing.
"""

from __future__ import annotations

import random

import pytest
from ir_support import sampler_with_nothing_learnt

from kernelopt.ir import build_ir
from kernelopt.workload import load_workload

MIXED = """
from kernelopt.ir import NKIMatmul


def f_nkigym(xT, w):
    return NKIMatmul()(stationary=xT, moving=w)


def f_numpy(xT, w):
    return xT.T @ w


INPUT_SPECS = {"xT": ((256, 256), "bfloat16"), "w": ((256, 512), "float32")}
"""


def _mixed(tmp_path):
    path = tmp_path / "mixed.py"
    path.write_text(MIXED)
    w = load_workload(path)
    return path, build_ir(w.f_nkigym, w.input_specs, name="mixed")


def test_a_graph_with_no_valid_state_still_shows_and_says_which_rule_breaks(
    tmp_path, monkeypatch
) -> None:
    """A matmul of a bf16 and an fp32 input read as is breaks a rule no knob changes. The IR
    still builds and shows; sampling names the rule the draws break; init stops
    cleanly and writes nothing."""
    from click.testing import CliRunner

    from kernelopt.cli import main

    sampling = sampler_with_nothing_learnt(monkeypatch)
    path, ir = _mixed(tmp_path)
    with pytest.raises(sampling.SampleError, match=r"the rule broken most often .*isa_dtype"):
        sampling.sample(ir, random.Random(0))
    shown = CliRunner().invoke(main, ["ir", "show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "no valid knob state was found; these knobs break:" in shown.output
    assert "nc_matmul needs stationary and moving of one dtype" in shown.output
    started = CliRunner().invoke(main, ["ir", "init", str(path), "--pool", "4"])
    assert started.exit_code == 1
    assert "no rewrite variant of mixed has a valid knob state" in started.output
    assert not (tmp_path / "mixed_knobs.json").exists()


def test_a_graph_searched_in_full_is_not_searched_again(tmp_path, monkeypatch) -> None:
    sampling = sampler_with_nothing_learnt(monkeypatch)
    _, ir = _mixed(tmp_path)
    with pytest.raises(sampling.SampleError) as first:
        sampling.sample(ir, random.Random(0))
    calls = []
    monkeypatch.setattr(sampling, "derive", lambda state: calls.append(state))
    with pytest.raises(sampling.SampleError) as again:
        sampling.sample(ir, random.Random(1))
    assert str(again.value) == str(first.value)
    assert not calls


def test_sampling_over_variants_skips_one_with_no_state_and_keeps_drawing(
    tmp_path, monkeypatch
) -> None:
    """`kernelopt ir sample` draws over the variants in turn; a variant with no state
    that fits is left out (and named) while another variant still has states; only
    when none has does the first error stop it."""
    from ir_support import small_ir

    from kernelopt.ir.footprint import fits

    sampling = sampler_with_nothing_learnt(monkeypatch)
    _, mixed = _mixed(tmp_path)
    good = small_ir("matmul")
    states, skipped = sampling.sample_rotation([mixed, good], 4, random.Random(0))
    assert len(states) == 4
    assert all(s.func_name == good.func_name and fits(s) for s in states)
    assert list(skipped) == [mixed.variant] and "isa_dtype" in skipped[mixed.variant]
    with pytest.raises(sampling.SampleError, match="isa_dtype"):
        sampling.sample_rotation([mixed], 2, random.Random(0))


WIDE_ROWS = """
from kernelopt.ir import NKIActivation, NKITensorReduce, NKITensorScalar


def f_nkigym(x):
    neg_max = NKITensorReduce(op="maximum", axis=1, negate=True)(data=x)
    e = NKIActivation(op="exp", bias=neg_max)(data=x)
    return NKITensorScalar(op0="divide", operand0=NKITensorReduce(op="add", axis=1)(data=e))(data=e)


def f_numpy(x):
    return x


INPUT_SPECS = {"x": ((64, 50257), "DTYPE")}
"""


def test_rows_too_wide_for_sbuf_stop_init_and_sampling_with_the_buffer_that_overflows(
    tmp_path,
) -> None:
    # The row max reads each row of x whole: 50257 fp32 values are 196.3 KiB on one
    # partition, over SBUF's 192 KiB. `ir init` chose the base knobs anyway and the
    # run failed measuring its baseline (out of memory in sbuf).
    from kernelopt.ir.footprint import capacity_problem
    from kernelopt.ir.sample import SampleError, sample_fitting
    from kernelopt.ir.start import initial_state

    path = tmp_path / "wide.py"
    path.write_text(WIDE_ROWS.replace("DTYPE", "float32"))
    w = load_workload(path)
    with pytest.raises(SampleError, match=r"sbuf_x alone needs 196\.3 KiB per partition"):
        initial_state(w)
    ir = build_ir(w.f_nkigym, w.input_specs, name="wide")
    with pytest.raises(SampleError, match=r"fits on chip in \d+ draws: sbuf_x alone needs"):
        sample_fitting(ir, random.Random(0))
    path.write_text(WIDE_ROWS.replace("DTYPE", "bfloat16"))  # 98.2 KiB: may fit
    w = load_workload(path)
    assert capacity_problem(build_ir(w.f_nkigym, w.input_specs, name="wide")) is None


def test_init_stops_when_the_simulator_refuses_every_screened_state(tmp_path) -> None:
    # In bf16 a row of x is 98.2 KiB, but x and exp(x) (both held whole for their row
    # reductions) are live together: 196.3 KiB. Every screened state ran out of SBUF
    # and `ir init` wrote the base knobs, which fail the same way as the run's baseline.
    from kernelopt.ir.sample import SampleError
    from kernelopt.ir.start import initial_state

    path = tmp_path / "wide.py"
    path.write_text(WIDE_ROWS.replace("DTYPE", "bfloat16"))
    with pytest.raises(SampleError, match=r"runs on the simulator.*Out of memory in sbuf"):
        initial_state(load_workload(path))
