"""Names a user picks (a workload's folder, its inputs) never break the rendered kernel."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kernelopt.ir import IRBuildError, render_ir, sample
from kernelopt.ir.build import kernel_name
from kernelopt.ir.knobs_io import ir_for_workload
from kernelopt.sim import check_kernel
from kernelopt.workload import load_workload

# An rms norm feeding a matmul, its two inputs named {a} and {b}.
RMS_MATMUL = """
import numpy as np
from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose


def f_nkigym({a}, {b}):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data={a}))
    scaled = NKITensorScalar(op0="multiply", operand0=1.0 / 256, op1="add", operand1=1e-6)
    rs = NKIActivation(op="rsqrt")(data=scaled(data=ss))
    normed = NKITensorScalar(op0="multiply", operand0=rs)(data={a})
    return NKIMatmul()(stationary=NKITranspose()(data=normed), moving={b})


def f_numpy({a}, {b}):
    a_ = np.asarray({a}, dtype=np.float32)
    rs_ = 1.0 / np.sqrt((a_ * a_).sum(axis=1, keepdims=True) / 256 + 1e-6)
    return (a_ * rs_) @ np.asarray({b}, dtype=np.float32)


INPUT_SPECS = {{"{a}": ((256, 256), "bfloat16"), "{b}": ((256, 512), "bfloat16")}}
"""


def _workload(tmp_path: Path, folder: str, a: str = "x", b: str = "w") -> Path:
    path = tmp_path / folder / "workload.py"
    path.parent.mkdir(parents=True)
    path.write_text(RMS_MATMUL.format(a=a, b=b))
    return path


def _runs_correct(path: Path, tmp_path: Path, seeds: int = 3) -> str:
    """Render the base state and ``seeds`` drawn ones; each must run correct on the sim.
    Returns the base kernel's source."""
    w = load_workload(path)
    base = ir_for_workload(w)
    states = [base, *(sample(base, random.Random(s)) for s in range(seeds))]
    sources = [render_ir(state) for state in states]
    for i, source in enumerate(sources):
        kernel = tmp_path / f"kernel_{i}.py"
        kernel.write_text(source)
        report = check_kernel(kernel, w)
        assert report.correct, (i, report.error)
    return sources[0]


@pytest.mark.parametrize("folder", ["rms-norm", "2048", "tmp.QlzVcUfkv1", "class"])
def test_a_workload_folder_no_def_could_take_still_names_a_kernel_that_runs(
    tmp_path: Path, folder: str
) -> None:
    source = _runs_correct(_workload(tmp_path, folder), tmp_path)
    name = kernel_name(folder)
    assert name.isidentifier() and name != folder
    assert f"def {name}(x, w):" in source


def test_kernel_names_keep_what_they_can_and_avoid_the_module_names() -> None:
    assert kernel_name("rms_norm") == "rms_norm"
    assert kernel_name("rms-norm v2") == "rms_norm_v2"
    assert kernel_name("7b_mlp") == "k_7b_mlp"
    assert kernel_name("résumé") == "r_sum_"
    assert kernel_name("lambda") == "lambda_"
    assert {kernel_name(m) for m in ("nki", "nisa", "nl")} == {"nki_", "nisa_", "nl_"}


@pytest.mark.parametrize(("a", "b"), [("sbuf_w", "w"), ("x", "psum_t6"), ("sbuf_ss", "w")])
def test_inputs_named_like_the_irs_own_buffers_build_and_run(
    tmp_path: Path, a: str, b: str
) -> None:
    # The IR names input w's SBUF buffer sbuf_w and the matmul's accumulator psum_t6.
    source = _runs_correct(_workload(tmp_path, "named", a, b), tmp_path)
    assert f"def named({a}, {b}):" in source


@pytest.mark.parametrize("module", ["nl", "nisa"])
def test_an_input_named_like_a_module_the_kernel_uses_is_refused_by_name(
    tmp_path: Path, module: str
) -> None:
    with pytest.raises(IRBuildError, match=f"input '{module}'.*rename the parameter"):
        ir_for_workload(_workload(tmp_path, "mod", module, "w"))


# Names a user might give: identifiers that echo the IR's own (sbuf_, psum_, out, loop
# variables), the modules' import names with a suffix, keywords' neighbours.
_NAME_PARTS = st.sampled_from(
    ["x", "w", "out", "sbuf", "psum", "row", "col", "l0", "b1", "t2", "t6", "f", "nki", "k"]
)
_INPUT_NAMES = st.lists(_NAME_PARTS, min_size=1, max_size=3).map("_".join)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    a=_INPUT_NAMES,
    b=_INPUT_NAMES,
    folder=st.text(alphabet="ab-.1 _", min_size=1, max_size=8),
)
def test_any_folder_and_input_names_render_a_kernel_that_runs(
    tmp_path_factory: pytest.TempPathFactory, a: str, b: str, folder: str
) -> None:
    assume(a != b and folder.strip(" .") == folder)
    tmp = tmp_path_factory.mktemp("names")
    w = load_workload(_workload(tmp, folder, a, b))
    state = sample(ir_for_workload(w), random.Random(0))
    kernel = tmp / "kernel.py"
    kernel.write_text(render_ir(state))
    report = check_kernel(kernel, w)
    assert report.correct, report.error
