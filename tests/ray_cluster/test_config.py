"""device.executor / device.ray keys, the missing-extra error, and resource arithmetic.

These run without Ray installed.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kernelopt.program import ProgramError, RayConfig, load_program
from kernelopt.ray_executor import (
    INSTALL_HINT,
    RayExecutorError,
    actor_options,
    default_resources,
    ray_survey,
    require_ray,
    slots_for,
)
from kernelopt.session import SessionError, make_executor


def program(tmp_path: Path, device: dict[str, Any]) -> Any:
    (tmp_path / "knobs.json").write_text('{"X": 1}\n')
    front = {
        "name": "r",
        "target": {
            "kind": "command",
            "command": "python bench.py",
            "results": {"format": "stdout"},
        },
        "metric": {"name": "time", "better": "lower"},
        "device": device,
    }
    path = tmp_path / "programs" / "r.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text("---\n" + yaml.safe_dump(front) + "---\nTune.\n")
    return load_program(path, root=tmp_path)


def test_the_hosts_executor_is_the_default(tmp_path: Path) -> None:
    device = program(tmp_path, {"kind": "none"}).device
    assert device.executor == "hosts"
    assert device.ray == RayConfig()


def test_ray_keys_are_read(tmp_path: Path) -> None:
    ray = {
        "address": "ray://head:10001",
        "num_cpus": 4,
        "resources_per_device": {"neuron_cores": 2},
        "task_timeout": "30s",
    }
    device = program(tmp_path, {"kind": "neuron", "executor": "ray", "ray": ray}).device
    assert device.executor == "ray"
    assert device.ray == RayConfig("ray://head:10001", 4, {"neuron_cores": 2.0}, 30.0)


@pytest.mark.parametrize(
    ("ray", "where", "says"),
    [
        ({"address": "head:6379"}, "device.ray.address", "ray://host:port"),
        ({"resources_per_device": {"GPU": 0}}, "device.ray.resources_per_device", "'GPU'"),
        ({"resources_per_device": {"GPU": "one"}}, "device.ray.resources_per_device", "positive"),
        ({"num_cpus": 0}, "device.ray.num_cpus", "positive"),
        ({"task_timeout": "soon"}, "device.ray.task_timeout", "soon"),
        ({"adress": "auto"}, "device.ray.adress", "unknown key"),
    ],
)
def test_bad_ray_keys_are_reported_with_their_path(
    tmp_path: Path, ray: dict[str, Any], where: str, says: str
) -> None:
    with pytest.raises(ProgramError) as error:
        program(tmp_path, {"kind": "none", "executor": "ray", "ray": ray})
    [problem] = error.value.problems
    assert problem.path == where and says in problem.message


def test_an_unknown_executor_lists_the_choices(tmp_path: Path) -> None:
    with pytest.raises(ProgramError, match="device.executor: expected one of hosts, ray"):
        program(tmp_path, {"kind": "none", "executor": "slurm"})


def test_without_ray_the_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(RayExecutorError, match=r"pip install -e '\.\[ray\]'"):
        require_ray()
    prog = program(tmp_path, {"kind": "none", "executor": "ray"})
    with pytest.raises(SessionError) as error:
        make_executor(prog, "none")
    assert str(error.value).startswith(str(prog.path)) and INSTALL_HINT in str(error.value)
    with pytest.raises(RayExecutorError, match=r"\[ray\]"):
        ray_survey(prog)


def test_one_device_worth_of_resources_by_kind() -> None:
    assert default_resources("neuron", lnc=2) == {"neuron_cores": 2.0}
    assert default_resources("nvidia") == {"GPU": 1.0}
    assert default_resources("none") == {"CPU": 1.0}


def test_actor_options_ask_for_exactly_the_resources_named() -> None:
    assert actor_options({"neuron_cores": 2}) == {
        "num_cpus": 0.0,
        "max_restarts": 0,
        "max_task_retries": 0,
        "resources": {"neuron_cores": 2},
    }
    gpu = actor_options({"GPU": 1, "CPU": 2})
    assert (gpu["num_gpus"], gpu["num_cpus"], "resources" in gpu) == (1, 2, False)


amounts = st.floats(min_value=0.25, max_value=64, allow_nan=False)


@given(
    per=st.dictionaries(st.sampled_from(["CPU", "GPU", "neuron_cores"]), amounts, min_size=1),
    have=st.dictionaries(
        st.sampled_from(["CPU", "GPU", "neuron_cores"]),
        st.floats(min_value=0, max_value=512, allow_nan=False),
    ),
)
def test_slots_are_the_most_devices_the_cluster_fits(
    per: dict[str, float], have: dict[str, float]
) -> None:
    slots = slots_for(have, per)
    tolerance = 1e-6
    for name, amount in per.items():  # they all fit...
        assert slots * amount <= have.get(name, 0.0) + tolerance * max(1.0, slots * amount)
    # ...and one more would not.
    assert any(
        (slots + 1) * amount > have.get(name, 0.0) - tolerance * max(1.0, (slots + 1) * amount)
        for name, amount in per.items()
    )
    assert slots >= 0 and not math.isnan(slots)
