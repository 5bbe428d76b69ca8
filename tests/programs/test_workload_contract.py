"""The seed's six-name workload.py fills the program's hosts and MFU target when it leaves them out."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelopt.program import ProgramError, load_program

WORKLOAD = """
import numpy as np
from kernelopt.ir import NKIMatmul

def f_nkigym(lhsT, rhs):
    return NKIMatmul()(stationary=lhsT, moving=rhs)

def f_numpy(lhsT, rhs):
    return lhsT.T @ rhs

INPUT_SPECS = {"lhsT": ((256, 128), "bfloat16"), "rhs": ((256, 512), "bfloat16")}
CACHE_ROOT = "/tmp/cache"
HOSTS = ["gym-1", "gym-2"]
TARGET_MFU = 88.5
"""


def write(tmp_path: Path, front: str, workload: str = WORKLOAD) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "ir" / "k").mkdir(parents=True)
    (tmp_path / "ir" / "k" / "workload.py").write_text(workload)
    (tmp_path / "ir" / "k" / "kernel.py").write_text("# kernel\n")
    path = tmp_path / "p.md"
    path.write_text(
        f"---\nname: k\ntarget: {{kind: nki, workload: ir/k/workload.py, kernel: ir/k/kernel.py}}\n{front}---\nbody\n"
    )
    return path


def test_hosts_and_target_come_from_the_workload(tmp_path: Path) -> None:
    program = load_program(write(tmp_path, "metric: {name: mfu, better: higher}\n"))
    assert program.device.hosts == ("gym-1", "gym-2")
    assert program.stop.target == 88.5


def test_the_program_wins_where_it_says_something(tmp_path: Path) -> None:
    front = "metric: {name: mfu, better: higher}\ndevice: {hosts: [gym-9]}\nstop: {target: 80}\n"
    program = load_program(write(tmp_path, front))
    assert program.device.hosts == ("gym-9",)
    assert program.stop.target == 80


def test_a_broken_workload_is_a_program_problem_naming_the_key(tmp_path: Path) -> None:
    bad = WORKLOAD.replace("INPUT_SPECS =", "raise RuntimeError('boom')\nINPUT_SPECS =")
    with pytest.raises(ProgramError) as err:
        load_program(write(tmp_path, "metric: {name: mfu, better: higher}\n", bad))
    assert "target.workload" in str(err.value) and "boom" in str(err.value)


def test_a_workload_missing_names_lists_every_one(tmp_path: Path) -> None:
    from kernelopt.workload import SEED_CONTRACT, WorkloadError, load_workload

    path = tmp_path / "w.py"
    path.write_text("import numpy as np\nINPUT_SPECS = {'a': ((2, 2), 'float32')}\n")
    with pytest.raises(WorkloadError) as err:
        load_workload(path, require=SEED_CONTRACT)
    for name in ("f_nkigym", "f_numpy", "CACHE_ROOT", "HOSTS", "TARGET_MFU"):
        assert name in str(err.value)


def test_the_key_reference_in_docs_is_generated_from_the_schema() -> None:
    from kernelopt.schema import reference_markdown

    docs = Path(__file__).resolve().parents[2] / "docs" / "program.md"
    assert docs.read_text() == reference_markdown(), (
        "regenerate: python -m kernelopt.schema > docs/program.md"
    )


@pytest.mark.parametrize(
    ("spelled", "name"),
    [
        ('"bfloat16"', "bfloat16"),
        ("np.float32", "float32"),
        ("np.dtype('float16')", "float16"),
        ("__import__('ml_dtypes').bfloat16", "bfloat16"),
        ('"bf16"', "bfloat16"),  # the short names NKI and the Neuron tools print
        ('"fp32"', "float32"),
        ('"fp16"', "float16"),
    ],
)
def test_an_input_dtype_may_be_a_numpy_type_or_its_name(
    tmp_path: Path, spelled: str, name: str
) -> None:
    from kernelopt.workload import load_workload

    path = tmp_path / "w.py"
    path.write_text(WORKLOAD.replace('"bfloat16")}', f"{spelled})}}"))
    assert load_workload(path).input_specs["rhs"] == ((256, 512), name)


def test_a_dtype_numpy_does_not_know_names_the_input_and_the_value(tmp_path: Path) -> None:
    from kernelopt.workload import WorkloadError, load_workload

    path = tmp_path / "w.py"
    path.write_text(WORKLOAD.replace('"bfloat16")}', '"bfloat15")}'))
    with pytest.raises(WorkloadError, match=r"INPUT_SPECS\['rhs'\].*'bfloat15'"):
        load_workload(path)
