"""Fake nrtpy: loads a fake NEFF and "executes" it by sleeping for the time
kernelopt's cost model gave it, so host-side timing behaves like a device."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from kernelopt.testing.fake_trn2 import config, neff


class NrtError(RuntimeError):
    pass


class NrtpyModel:
    def __init__(self, data: dict[str, Any], name: str, core_id: int) -> None:
        self.data = data
        self.name = name
        self.core_id = core_id
        self._settings = config.load()
        self._random = random.Random(name)

    @classmethod
    def load_from_neff(
        cls,
        neff_path: str | os.PathLike[str],
        name: str | None = None,
        core_id: int = 0,
        cc_enabled: bool = False,
        rank_id: int = 0,
        world_size: int = 1,
    ) -> NrtpyModel:
        if not os.environ.get("NEURON_RT_VISIBLE_CORES"):
            raise NrtError("NRT_FAILURE: no NeuronCore visible (set NEURON_RT_VISIBLE_CORES)")
        try:
            data = neff.read(neff_path, neff.NEFF_FORMAT)
        except neff.FakeFileError as error:
            raise NrtError(f"NRT_INVALID: {error}") from None
        configured = os.environ.get("NEURON_LOGICAL_NC_CONFIG", "1")
        if str(data["lnc"]) != configured:
            raise NrtError(
                f"NRT_INVALID: the NEFF was compiled for LNC={data['lnc']} but "
                f"NEURON_LOGICAL_NC_CONFIG={configured}"
            )
        return cls(data, name or Path(neff_path).stem, core_id)

    @property
    def input_tensors_info(self) -> dict[str, Any]:
        return dict(self.data["inputs"])

    def __call__(self, inputs: dict[str, Any], outputs: Any = None, **_: Any) -> dict[str, Any]:
        if self._settings["run_error"]:
            raise NrtError(f"NRT_EXEC_ERROR: {self._settings['run_error']}")
        missing = set(self.data["inputs"]) - set(inputs)
        if missing:
            raise NrtError(f"NRT_INVALID: missing input tensors {sorted(missing)}")
        modelled = float(self.data["profile"].get("total_time", 0.0))
        spread = float(self._settings["jitter"])
        time.sleep(modelled * (1.0 + spread * self._random.random()))
        return {}
