"""Which NKI namespace a host gets a kernel in: as written where the host has it, the
other rendering of a KernelIR kernel's committed knobs where it does not, and a
clear failure (SDK, namespace, fix) before anything is shipped otherwise."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest

from kernelopt.ir import ir_for_workload, knobs_text, render_ir
from kernelopt.neuron.kernel_api import KernelApiError, choose, namespace_of
from kernelopt.neuron.sdk import SdkPlan
from kernelopt.neuron.shipping import for_host

KERNELS = Path(__file__).resolve().parent / "kernels"
KERNEL, WORKLOAD, KNOBS = "ir/small/kernel.py", "ir/small/workload.py", "ir/small/knobs.json"


def _plan(namespaces: tuple[str, ...], generation: str, **kw: object) -> SdkPlan:
    base = {
        "compile_api": "nki_standalone",
        "compile_api_version": None,
        "runtime": None,
        "runtime_version": None,
        "profiler": "neuron-profile",
        "profiler_version": None,
        "compiler_version": None,
        "baseline": "nkipy",
        "environments": "one",
        "path": "capture",
        "generation": generation,
        "namespaces": namespaces,
        "baremetal": "neuronxcc" in namespaces,
    }
    return SdkPlan(**{**base, **kw})  # type: ignore[arg-type]


SDK_2_26 = _plan(("neuronxcc",), "2.22-2.26", path="baremetal")
SDK_2_27 = _plan(("nki", "neuronxcc"), "2.27-2.29")
SDK_2_30 = _plan(("nki",), "2.30-2.31", compile_api="nki.compiler")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A KernelIR tree whose kernel.py is exactly the rendering of its knobs.json."""
    root = tmp_path / "tree"
    (root / "ir" / "small").mkdir(parents=True)
    shutil.copy(KERNELS / "workload.py", root / WORKLOAD)
    ir = ir_for_workload(root / WORKLOAD)
    (root / KNOBS).write_text(knobs_text(ir))
    (root / KERNEL).write_text(render_ir(ir))
    return root


def test_the_namespace_is_read_from_the_imports() -> None:
    assert namespace_of("import nki\nimport nki.language as nl\n") == "nki"
    assert namespace_of("from nki import isa\n") == "nki"
    assert namespace_of("from neuronxcc import nki\nimport neuronxcc.nki.isa as nisa\n") == (
        "neuronxcc"
    )
    assert namespace_of("import neuronxcc.nki as nki\n") == "neuronxcc"
    assert namespace_of("import numpy\n") is None
    assert namespace_of("import nki\nimport neuronxcc.nki\n") is None  # both: the compiler decides
    assert namespace_of("def (:\n") is None


def test_a_knob_kernel_goes_to_a_beta1_host_as_its_beta1_rendering(tree: Path) -> None:
    ship = for_host(tree, KERNEL, WORKLOAD, KNOBS, "auto", SDK_2_26, b"", tree.parent / "s")
    ir = ir_for_workload(tree / WORKLOAD)
    assert ship.kernel.read_text() == render_ir(ir, api="beta1")  # what the CPU check reads
    assert (ship.path, ship.compile_api) == ("baremetal", "neuronxcc.nki.baremetal")
    assert ship.record["api"] == "neuronxcc" and ship.record["shipped"] == "rendered"
    assert ship.record["rendered_from"] == KNOBS and ship.record["committed"] == "nki"
    with tarfile.open(fileobj=io.BytesIO(ship.data)) as tar:
        shipped = tar.extractfile(f"tree/{KERNEL}")
        assert shipped is not None and shipped.read().decode() == render_ir(ir, api="beta1")
        knobs = tar.extractfile(f"tree/{KNOBS}")
        assert knobs is not None and knobs.read().decode() == knobs_text(ir)
    # The same tree to a host with the nki namespace: as written, the tree as packed.
    same = for_host(tree, KERNEL, WORKLOAD, KNOBS, "auto", SDK_2_30, b"packed", tree / "s")
    assert same.data == b"packed" and same.kernel == tree / KERNEL
    assert same.record["shipped"] == "as written" and same.path == "capture"


def test_a_beta1_knob_kernel_goes_to_a_new_host_as_its_nki_rendering(tree: Path) -> None:
    ir = ir_for_workload(tree / WORKLOAD)
    (tree / KERNEL).write_text(render_ir(ir, api="beta1"))
    ship = for_host(tree, KERNEL, WORKLOAD, KNOBS, "auto", SDK_2_30, b"", tree.parent / "s")
    assert ship.kernel.read_text() == render_ir(ir) and ship.record["api"] == "nki"


def test_a_hand_edited_nki_kernel_fails_on_a_beta1_host_naming_sdk_namespace_and_fix(
    tree: Path,
) -> None:
    (tree / KERNEL).write_text((tree / KERNEL).read_text() + "\n# tuned by hand\n")
    with pytest.raises(KernelApiError) as raised:
        for_host(tree, KERNEL, WORKLOAD, KNOBS, "auto", SDK_2_26, b"", tree.parent / "s")
    message = str(raised.value)
    assert "Neuron SDK 2.22-2.26" in message and "imports the nki namespace" in message
    assert "Fix:" in message and "--api beta1" in message and "2.27" in message


def test_a_beta1_kernel_runs_as_written_where_beta1_exists_and_fails_from_2_30() -> None:
    source = (KERNELS / "kernel_beta1.py").read_text()
    for host in (SDK_2_26, SDK_2_27):
        shipped = choose(KERNEL, source, "auto", host, lambda _: None)
        assert shipped.namespace == "neuronxcc" and shipped.text is None
        assert host.route("neuronxcc")[0] == "baremetal"
    with pytest.raises(KernelApiError) as raised:
        choose(KERNEL, source, "auto", SDK_2_30, lambda _: None)
    message = str(raised.value)
    assert "Neuron SDK 2.30-2.31" in message and "neuronxcc.nki" in message
    assert "compile error from Neuron 2.30" in message and "import nki" in message


def test_the_program_key_forces_a_namespace(tree: Path) -> None:
    # On 2.27 (both namespaces) kernel_api: neuronxcc ships the beta-1 rendering.
    ship = for_host(tree, KERNEL, WORKLOAD, KNOBS, "neuronxcc", SDK_2_27, b"", tree.parent / "s")
    assert ship.record["api"] == "neuronxcc" and ship.path == "baremetal"
    with pytest.raises(KernelApiError, match="kernel_api is nki.*2.22-2.26"):
        for_host(tree, KERNEL, WORKLOAD, KNOBS, "nki", SDK_2_26, b"", tree.parent / "s")


def test_a_forced_namespace_the_kernel_cannot_take_names_the_setting(tree: Path) -> None:
    (tree / KERNEL).write_text((tree / KERNEL).read_text() + "\n# tuned by hand\n")
    with pytest.raises(KernelApiError) as raised:
        for_host(tree, KERNEL, WORKLOAD, KNOBS, "neuronxcc", SDK_2_27, b"", tree.parent / "s")
    message = str(raised.value)
    assert "kernel_api is neuronxcc" in message and "not the rendering of" in message
    assert "does not have" not in message  # the host has both: the setting asked for it
