"""The option enums of ``nki.isa`` that real kernels pass, as plain constants.

``engine=`` chooses the engine an instruction runs on (the cost model
honours it); ``dge_mode``, ``oob_mode`` and ``matmul_perf_mode`` are
accepted so that kernels written for the hardware run unchanged. Both the
current spelling (``nisa.engine.vector``) and the older module-level one
(``nisa.vector_engine``) appear in public kernels.
"""

from __future__ import annotations

import types
from typing import Any

# engine= value -> the simulator's engine name ("" lets the instruction pick).
ENGINE_NAMES = {"tensor": "tensor", "vector": "vector", "scalar": "scalar", "gpsimd": "gpsimd"}


class EngineChoice(str):
    """One ``nisa.engine`` member; its value is the simulator's engine name or ''."""

    def __repr__(self) -> str:
        return f"nisa.engine.{self or 'unknown'}"


def _namespace(name: str, members: dict[str, Any]) -> types.SimpleNamespace:
    ns = types.SimpleNamespace(**members)
    ns.__doc__ = f"nki.isa.{name} as accepted by the simulator"
    return ns


def add_enums(nisa: types.ModuleType) -> None:
    engines = {name: EngineChoice(value) for name, value in ENGINE_NAMES.items()}
    engines["unknown"] = EngineChoice("")
    nisa.engine = _namespace("engine", engines)
    for name, choice in engines.items():
        setattr(nisa, f"{name}_engine", choice)  # older spelling
    nisa.dge_mode = _namespace(
        "dge_mode", {m: f"dge_mode.{m}" for m in ("none", "swdge", "hwdge", "unknown")}
    )
    nisa.oob_mode = _namespace("oob_mode", {m: f"oob_mode.{m}" for m in ("error", "skip")})
    # load_reduce: nki.isa.tensor_scalar_cumulative (v2.27.0) starts its register at imm1.
    commands = ("idle", "reset", "reduce", "reset_reduce", "load_reduce")
    nisa.reduce_cmd = _namespace("reduce_cmd", {m: f"reduce_cmd.{m}" for m in commands})
    nisa.matmul_perf_mode = _namespace(
        "matmul_perf_mode", {m: f"matmul_perf_mode.{m}" for m in ("none", "double_row")}
    )
    # The simulator models a Trainium2 NeuronCore (NeuronCore-v3).
    nisa.nc_version = _namespace("nc_version", {"gen2": 2, "gen3": 3, "gen4": 4})
    nisa.get_nc_version = lambda: nisa.nc_version.gen3


def engine_of(value: Any) -> str | None:
    """The engine an ``engine=`` argument names, '' for unknown; None if not an engine."""
    if value is None:
        return ""
    if isinstance(value, EngineChoice):
        return str(value)
    return None
