"""Fake ``nrtpy``, written from the public record, interface by interface.

* ``NrtpyModel.load_from_neff(neff_path, name=None, core_id=0, cc_enabled=False,
  rank_id=0, world_size=1)``, ``input_tensors_info`` / ``output_tensors_info``
  (name -> metadata with ``shape`` and ``size``), ``__call__(inputs, outputs=None,
  save_trace=False, ntff_name=None)`` and ``benchmark(inputs, outputs=None,
  warmup_iter=5, benchmark_iter=5, mode="device")`` returning ``BenchmarkResult``
  (milliseconds). Source: aws-neuron/aws-neuron-sdk
  neuron-runtime/nrtpy/model.rst (nrtpy model API, 2026-07-30).
* ``NrtpyTensor.from_numpy(array, name=None, core_id=0)``, ``write_from_numpy``,
  ``numpy()``; auto-allocated outputs may come back as raw bytes (void dtype) to
  be reinterpreted by the caller. Source: nrtpy tensor reference and "Tutorial:
  Validate, benchmark, and trace a kernel with nrtpy".
* ``configure(visible_cores=None)`` before the runtime starts, ``reset()``.
  Source: nrtpy ``configuration.rst``. Not required: without
  NEURON_RT_VISIBLE_CORES every core is visible and a model loads on core 0
  (see ``kernelopt.testing.fake_trn2.cores``), as the real runtime does.
* The NEFF must be compiled for the runtime's LNC (NEURON_LOGICAL_NC_CONFIG,
  else the host's): logical-neuroncore-config.rst ("You must compile your
  Models to use the LNC configuration set by the Neuron Runtime environment
  variable"). The error's status and text are unverified.
* Errors carry an NRT status name and code (nrtpy errors reference); the
  statuses chosen for each failure here are unverified.
* nrtpy first shipped in Neuron 2.32 and cannot share an environment with the
  ``nki`` wheel (nrtpy-getting-started.rst): importing it next to the fake
  current ``nki`` fails. The same page has the environment put the runtime's
  libraries on ``LD_LIBRARY_PATH`` (``/opt/aws/neuron/lib``): without them the
  import fails naming libnrt, in the dynamic loader's usual words (the exact text
  is unverified).
* ``BenchmarkResult`` field names other than ``mean_ms``/``min_ms`` are
  unverified; ``durations_ms`` is offered, and a release without
  ``benchmark`` can be configured (``no_device_benchmark``).

The "device" behind it is the fake hardware model
(kernelopt.testing.fake_trn2.hardware); each load records where it ran
(chip, logical core, LNC) in the fake's call log.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelopt.testing.fake_trn2 import config, hardware, neff
from kernelopt.testing.fake_trn2.cores import BindFailure, PlacementError, place


def _settings() -> dict[str, Any]:
    return config.current()


__version__ = str(_settings()["runtime_version"])


def _nki_wheel_here() -> bool:
    spec = importlib.util.find_spec("nki")
    origin = getattr(spec, "origin", None) if spec else None
    return bool(origin) and (Path(origin).parent / "compiler").is_dir()


if _settings()["sdk"] in ("current", "2.32") and _nki_wheel_here():
    raise ImportError(
        "nrtpy: the standalone nrtpy wheel and the nki wheel cannot be installed in the same "
        "Python environment (namespace conflict); run NEFFs from an nrtpy environment of its own"
    )


if "/opt/aws/neuron/lib" not in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
    raise ImportError("libnrt.so.1: cannot open shared object file: No such file or directory")


class NrtpyError(RuntimeError):
    """An error of the nrtpy layer (a freed tensor, configure() while active)."""


class NrtError(RuntimeError):
    """A libnrt status other than success; the message names the status."""

    def __init__(self, status: str, code: int, message: str) -> None:
        super().__init__(f"NRT Error {status}({code}): {message}")


_ACTIVE = {"runtime": False}


def configure(visible_cores: Iterable[int] | None = None) -> None:
    if _ACTIVE["runtime"]:
        raise RuntimeError("nrtpy.configure: the runtime is already active; call reset() first")
    if visible_cores is not None:
        if isinstance(visible_cores, int):
            raise TypeError("visible_cores must be an iterable of core ids, not an int")
        cores = [int(c) for c in visible_cores]
        if any(c < 0 for c in cores):
            raise ValueError("core ids must not be negative")
        os.environ["NEURON_RT_VISIBLE_CORES"] = ",".join(map(str, cores))


def reset() -> None:
    _ACTIVE["runtime"] = False


@dataclass(frozen=True)
class TensorMetadata:
    shape: tuple[int, ...]
    size: int


class NrtpyTensor:
    """A tensor in device memory (here: a byte buffer)."""

    def __init__(self, tensor_ref: Any, shape: tuple[int, ...] | int, dtype: Any, name=None):
        self._ref = tensor_ref
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.dtype = np.dtype(dtype)
        self.name = name or ""

    @classmethod
    def from_numpy(cls, array: np.ndarray, name: str | None = None, core_id: int = 0):
        data = np.ascontiguousarray(array)
        _ACTIVE["runtime"] = True
        return cls(data.view(np.uint8).reshape(-1).copy(), data.shape, data.dtype, name)

    def write_from_numpy(self, array: np.ndarray) -> None:
        data = np.ascontiguousarray(array)
        if data.nbytes != self._ref.nbytes:
            raise ValueError(
                f"write_from_numpy: {data.nbytes} bytes for a tensor of {self._ref.nbytes}"
            )
        self._ref[:] = data.view(np.uint8).reshape(-1)

    def numpy(self) -> np.ndarray:
        return self._ref.view(self.dtype).reshape(self.shape).copy()


@dataclass(frozen=True)
class BenchmarkResult:
    mean_ms: float
    min_ms: float
    max_ms: float
    std_dev_ms: float
    iterations: int
    warmup_iterations: int
    durations_ms: list[float]


class _Model:
    """What every nrtpy release offers: load, describe, execute."""

    def __init__(self, data: dict[str, Any], path: str, name: str, core_id: int) -> None:
        self.data = data
        self.path = path
        self.name = name
        self.core_id = core_id
        self._settings = _settings()
        self._outputs: dict[str, np.ndarray] | None = None

    @classmethod
    def load_from_neff(
        cls,
        neff_path: str | os.PathLike[str],
        name: str | None = None,
        core_id: int = 0,
        cc_enabled: bool = False,
        rank_id: int = 0,
        world_size: int = 1,
    ) -> _Model:
        settings = _settings()
        try:
            where = place(settings, core_id=core_id, neff=str(neff_path))
        except BindFailure as error:
            config.record_call("nrtpy", ["load_from_neff", str(neff_path)], failed=str(error))
            raise NrtError("NRT_FAILURE", 1, f"Failed to load model: {error}") from None
        except PlacementError as error:
            config.record_call("nrtpy", ["load_from_neff", str(neff_path)])
            raise NrtError("NRT_INVALID", 2, f"Failed to load model: {error}") from None
        config.record_call("nrtpy", ["load_from_neff", str(neff_path)], ran_on=where.as_dict())
        try:
            data = neff.read(neff_path, neff.NEFF_FORMAT)
        except neff.FakeFileError as error:
            raise NrtError("NRT_INVALID", 2, f"Failed to load model: {error}") from None
        if int(data["lnc"]) != where.lnc:
            raise NrtError(
                "NRT_INVALID",
                2,
                f"the NEFF was compiled for LNC={data['lnc']} but the runtime runs at "
                f"LNC={where.lnc} (NEURON_LOGICAL_NC_CONFIG)",
            )
        _ACTIVE["runtime"] = True
        model_class = _Model if _settings()["no_device_benchmark"] else NrtpyModel
        return model_class(data, str(neff_path), name or Path(neff_path).stem, core_id)

    @property
    def input_tensors_info(self) -> dict[str, TensorMetadata]:
        return {
            n: TensorMetadata(tuple(shape), _nbytes(shape, dtype))
            for n, (shape, dtype) in self.data["inputs"].items()
        }

    @property
    def output_tensors_info(self) -> dict[str, TensorMetadata]:
        return {
            n: TensorMetadata(tuple(shape), _nbytes(shape, dtype))
            for shape, dtype, n in self.data["outputs"]
        }

    def __call__(
        self,
        inputs: Mapping[str, NrtpyTensor],
        outputs: Mapping[str, NrtpyTensor] | None = None,
        save_trace: bool = False,
        ntff_name: str | None = None,
    ) -> dict[str, NrtpyTensor] | None:
        config.record_call("nrtpy", ["execute", self.path])
        results = self._execute(inputs)
        if save_trace:
            target = ntff_name or str(Path(self.path).with_suffix(".ntff"))
            factor = self._noise("trace", 1)[0]
            neff.write(
                Path(target),
                neff.NTFF_FORMAT,
                {"neff": self.path, "total_time": self._seconds() * factor},
            )
        return self._deliver(results, outputs)

    # -- the fake device -----------------------------------------------------

    def _execute(self, inputs: Mapping[str, NrtpyTensor]) -> dict[str, np.ndarray]:
        if self._settings["run_error"]:
            raise NrtError("NRT_EXEC_ERROR", 1003, self._settings["run_error"])
        expected = set(self.data["inputs"])
        if set(inputs) != expected:
            raise NrtError(
                "NRT_INVALID",
                2,
                f"input tensor names {sorted(inputs)} do not match the NEFF's {sorted(expected)}",
            )
        arrays = {}
        for name, (shape, dtype) in self.data["inputs"].items():
            tensor = inputs[name]
            if tensor._ref.nbytes != _nbytes(shape, dtype):
                raise NrtError("NRT_INVALID", 2, f"input {name!r}: wrong size")
            arrays[name] = tensor._ref.view(_dtype(dtype)).reshape(tuple(shape))
        if self._outputs is None:
            self._outputs = self._compute(arrays)
        return self._outputs

    def _compute(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return hardware.neff_outputs(self.data, arrays, self._settings["device_fault"])

    def _deliver(
        self, results: dict[str, np.ndarray], outputs: Mapping[str, NrtpyTensor] | None
    ) -> dict[str, NrtpyTensor] | None:
        if outputs is None:
            # libnrt does not always report the dtype: raw bytes, as the tutorial warns.
            return {
                n: NrtpyTensor(
                    np.ascontiguousarray(v).view(np.uint8).reshape(-1).copy(),
                    v.shape,
                    np.dtype(f"V{v.dtype.itemsize}"),
                    n,
                )
                for n, v in results.items()
            }
        if set(outputs) != set(results):
            raise NrtError("NRT_INVALID", 2, f"output names {sorted(outputs)} do not match")
        for n, v in results.items():
            outputs[n].write_from_numpy(v)
        return None

    def _seconds(self) -> float:
        return float(self.data["profile"].get("total_time", 0.0))

    def _noise(self, what: str, count: int) -> list[float]:
        log = config.home() / config.CALLS_NAME if os.environ.get(config.HOME_ENV) else None
        history = len(log.read_text().splitlines()) if log and log.exists() else 0
        digest = hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        return hardware.noise(
            self.data["profile"],
            float(self._settings["noise_pp"]),
            f"{digest}:{what}:{history}",
            count,
        )


class NrtpyModel(_Model):
    """A NEFF loaded on a NeuronCore, with the device-side benchmark."""

    def benchmark(
        self,
        inputs: Mapping[str, NrtpyTensor],
        outputs: Mapping[str, NrtpyTensor] | None = None,
        warmup_iter: int = 5,
        benchmark_iter: int = 5,
        mode: str = "device",
    ) -> BenchmarkResult:
        if mode not in ("device", "host"):
            raise ValueError(f"mode must be 'device' or 'host', got {mode!r}")
        if benchmark_iter < 1:
            raise ValueError("benchmark_iter must be at least 1")
        config.record_call(
            "nrtpy", ["benchmark", self.path, mode, str(warmup_iter), str(benchmark_iter)]
        )
        results = self._execute(inputs)
        if outputs is not None:
            self._deliver(results, outputs)
        launch = 0.0 if mode == "device" else 60e-6  # host timing adds the launch overhead
        durations = [
            1e3 * (self._seconds() * f + launch) for f in self._noise(mode, benchmark_iter)
        ]
        mean = sum(durations) / len(durations)
        spread = (sum((d - mean) ** 2 for d in durations) / len(durations)) ** 0.5
        # What the device reported, so a test can check figures against the source.
        config.record_call("nrtpy", ["benchmark-result", self.path], min_ms=min(durations))
        return BenchmarkResult(
            mean, min(durations), max(durations), spread, benchmark_iter, warmup_iter, durations
        )


def _dtype(name: str) -> np.dtype:
    """numpy's dtype of that name, or ml_dtypes' for the narrow floats (bfloat16)."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def _nbytes(shape: Any, dtype: str) -> int:
    return int(np.prod(shape)) * _dtype(dtype).itemsize
