"""Loop orders drawn from the graph's dependencies.

Two matmuls in a chain (a norm, x @ w1, an activation, then @ w2) admit only loop
orders where the second product's loops enclose the first product's reduction:
the hidden activations are complete only once that loop closes. Among the
uniform draws almost none are valid, and ``build_ir`` stopped with "no valid
knob state". When the plain draws all fail, loop orders are drawn among those
that honour ``loop_dependencies``.
"""

from __future__ import annotations

import importlib
import random

import pytest
from ir_support import sampler_with_nothing_learnt

from kernelopt.ir import build_ir, render_ir
from kernelopt.ir.derive import derive
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

sampling = importlib.import_module("kernelopt.ir.sample")

MLP = """
import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose


def f_nkigym(x, w1, w2):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt")(
        data=NKITensorScalar(op0="multiply", operand0=1 / 256, op1="add", operand1=1e-5)(data=ss)
    )
    h = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    a = NKIActivation(op="silu")(data=NKIMatmul()(stationary=NKITranspose()(data=h), moving=w1))
    return NKIMatmul()(stationary=NKITranspose()(data=a), moving=w2)


def f_numpy(x, w1, w2):
    x = x.astype(np.float32)
    h = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-5)
    a = h @ w1.astype(np.float32)
    a = a / (1 + np.exp(-a))
    return a @ w2.astype(np.float32)


INPUT_SPECS = {
    "x": ((256, 256), "bfloat16"),
    "w1": ((256, 256), "bfloat16"),
    "w2": ((256, 512), "bfloat16"),
}
"""


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    path = tmp_path_factory.mktemp("mlp") / "mlp.py"
    path.write_text(MLP)
    return load_workload(path)


@pytest.fixture(scope="module")
def ir(workload):
    return build_ir(workload.f_nkigym, workload.input_specs, name="mlp")


def _dims(ir):
    """The rows, the first product's reduction, its output width (the second's
    reduction) and the output width, named as the IR names them."""
    first, second = (op for op in ir.operators if op.kind == "matmul")
    rows = ir.buffer[second.dst].axes[0]
    (k1,) = ir.buffer[first.dst].lifetime_dims
    (k2,) = ir.buffer[second.dst].lifetime_dims
    n = ir.buffer[second.dst].axes[1]
    return rows, k1, k2, n


def test_the_second_products_loops_must_enclose_the_first_products_reduction(ir) -> None:
    rows, k1, k2, n = _dims(ir)
    pairs = sampling.loop_dependencies(ir)
    assert {(rows, k1), (k2, k1), (n, k1)} <= pairs
    assert (k1, k2) not in pairs and (k1, n) not in pairs


def test_ordered_draws_honour_every_dependency_that_is_not_on_a_cycle(ir) -> None:
    pairs = sampling.loop_dependencies(ir)
    rng = random.Random(0)
    for _ in range(50):
        order = sampling.draw_ordered_loops(ir, rng)
        for a, r in pairs:
            assert order.index(f"{a}.tile") < order.index(f"{r}.block"), (a, r, order)
        for d in ir.dims:
            assert order.index(f"{d.name}.block") < order.index(f"{d.name}.tile")


def test_ordered_draws_are_valid_where_uniform_draws_almost_never_are(ir) -> None:
    # Seeds 0-4 of 600 draws each gave 0-2 valid uniform draws and 7-14 ordered ones.
    plain = random.Random(0)
    assert sum(not derive(sampling.draw(ir, plain))[1] for _ in range(600)) <= 2
    ordered = random.Random(0)
    assert sum(not derive(sampling.draw(ir, ordered, ordered=True))[1] for _ in range(600)) >= 5


def test_chained_matmuls_sample_states_the_simulator_finds_correct(
    ir, workload, tmp_path, monkeypatch
) -> None:
    sampler_with_nothing_learnt(monkeypatch)
    for seed in range(2):
        state = sampling.sample(ir, random.Random(seed))
        assert not derive(state)[1]
        kernel = tmp_path / f"mlp_{seed}.py"
        kernel.write_text(render_ir(state))
        report = check_kernel(kernel, workload)
        assert report.correct, report.error


def test_once_uniform_draws_failed_on_a_graph_its_later_samples_start_ordered(
    ir, monkeypatch
) -> None:
    sampler_with_nothing_learnt(monkeypatch)
    kinds = []
    real_draw = sampling.draw

    def counted(state, rng, ordered=False):
        kinds.append(ordered)
        return real_draw(state, rng, ordered)

    monkeypatch.setattr(sampling, "draw", counted)
    sampling.sample(ir, random.Random(0))
    assert kinds.count(False) >= sampling.MAX_DRAWS  # the uniform draws all failed
    kinds.clear()
    later = sampling.sample(ir, random.Random(1))
    assert not derive(later)[1]
    assert kinds and all(kinds)  # no uniform draw spent


def test_without_the_ordered_draws_no_state_is_found(workload, monkeypatch) -> None:
    """The failure this fixes: with only uniform draws and climbs, no state is found
    (build_ir itself stopped with that error before)."""
    sampler_with_nothing_learnt(monkeypatch)
    monkeypatch.setattr(sampling, "draw_ordered_loops", sampling.draw_loop_order)
    ir = build_ir(workload.f_nkigym, workload.input_specs, name="mlp")
    assert derive(ir)[1]  # the default knobs, kept although invalid
    with pytest.raises(sampling.SampleError):
        sampling.sample(ir, random.Random(0))


ATTENTION = """
from kernelopt.ir import NKIActivation, NKIMatmul, NKIReciprocal, NKITensorReduce
from kernelopt.ir import NKITensorScalar, NKITranspose


def f_nkigym(qT, kT, v):
    s = NKIMatmul()(stationary=qT, moving=kT)
    neg_max = NKITensorReduce(op="maximum", axis=1, negate=True)(data=s)
    e = NKIActivation(op="exp", bias=neg_max)(data=s)
    r = NKIReciprocal()(data=NKITensorReduce(op="add", axis=1)(data=e))
    p = NKITensorScalar(op0="multiply", operand0=r)(data=e)
    return NKIMatmul()(stationary=NKITranspose()(data=p), moving=v)


def f_numpy(qT, kT, v):
    return v


INPUT_SPECS = {
    "qT": ((64, 256), "bfloat16"),
    "kT": ((64, 256), "bfloat16"),
    "v": ((256, 256), "bfloat16"),
}
"""


def _attention(tmp_path):
    path = tmp_path / "attention.py"
    path.write_text(ATTENTION)
    w = load_workload(path)
    return path, build_ir(w.f_nkigym, w.input_specs, name="attention")


def test_a_graph_no_loop_nest_holds_still_shows_and_says_which_rule_breaks(
    tmp_path, monkeypatch
) -> None:
    """Softmax between two products needs the keys' loop twice (whole rows of scores,
    then tiles of probabilities): no knob state exists. The IR still builds and
    shows; sampling names the rule the draws break."""
    from click.testing import CliRunner

    from kernelopt.cli import main

    sampler_with_nothing_learnt(monkeypatch)
    monkeypatch.setattr(sampling, "MAX_DRAWS", 60)
    monkeypatch.setattr(sampling, "CLIMBS", 2)
    path, ir = _attention(tmp_path)
    with pytest.raises(sampling.SampleError, match=r"the rule broken most often .*operand_scope"):
        sampling.sample(ir, random.Random(0))
    shown = CliRunner().invoke(main, ["ir", "show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "no valid knob state was found; these knobs break:" in shown.output
    started = CliRunner().invoke(main, ["ir", "init", str(path), "--pool", "4"])
    assert started.exit_code == 1
    assert "no rewrite variant of attention has a valid knob state" in started.output
    assert not (tmp_path / "attention_knobs.json").exists()


def test_a_graph_searched_in_full_is_not_searched_again(tmp_path, monkeypatch) -> None:
    sampler_with_nothing_learnt(monkeypatch)
    monkeypatch.setattr(sampling, "MAX_DRAWS", 30)
    monkeypatch.setattr(sampling, "CLIMBS", 1)
    _, ir = _attention(tmp_path)
    with pytest.raises(sampling.SampleError) as first:
        sampling.sample(ir, random.Random(0))
    calls = []
    monkeypatch.setattr(sampling, "derive", lambda state: calls.append(state))
    with pytest.raises(sampling.SampleError) as again:
        sampling.sample(ir, random.Random(1))
    assert str(again.value) == str(first.value)
    assert not calls
