"""Knob state as a file: ``ir/<kernel>/knobs.json`` to and from a KernelIR.

Names that do not exist in the IR (buffers, dims, scope values, rewrites) are
errors here; a state that names only real things but breaks a rule is left
for ``validity_report`` to explain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelopt.ir.build import build_ir
from kernelopt.ir.model import KernelIR, Scope
from kernelopt.ir.rewrites import REWRITES, apply_variant
from kernelopt.ir.sample import knobs_dict
from kernelopt.workload import Workload, load_workload

IR_REQUIRED = ("f_nkigym", "INPUT_SPECS")  # what building the IR reads of a workload

KEYS = ("variant", "loop_order", "ltiles_per_block", "buffer_scopes")


class KnobsError(ValueError):
    """A knobs.json that names something the IR does not have."""


def knobs_to_json(ir: KernelIR) -> dict[str, Any]:
    """The knob state (and rewrite variant) as JSON-ready values."""
    return knobs_dict(ir)


def knobs_text(ir: KernelIR) -> str:
    """``knobs_to_json`` as the exact text written to knobs.json."""
    return json.dumps(knobs_to_json(ir), indent=2) + "\n"


def ir_for_workload(workload: Workload | str | Path) -> KernelIR:
    """The base IR (default knobs) of a workload file or loaded workload. The IR needs
    f_nkigym and INPUT_SPECS only; f_numpy, the oracle, is required where a kernel is
    checked."""
    if not isinstance(workload, Workload):
        workload = load_workload(workload, require=IR_REQUIRED)
    if workload.f_nkigym is None:
        raise KnobsError(f"{workload.path}: defines no f_nkigym")
    return build_ir(workload.f_nkigym, workload.input_specs, name=workload.name)


def _where(source: str, key: str) -> str:
    return f"{source}: {key}"


def ir_from_knobs(
    base: KernelIR | Workload | str | Path, data: dict[str, Any], source: str = "knobs"
) -> KernelIR:
    """The base IR rewritten to ``data['variant']`` with the given knobs applied.

    Missing keys keep the variant's defaults; per buffer, scopes merge by dim.
    """
    ir = base if isinstance(base, KernelIR) else ir_for_workload(base)
    if ir.variant != "base":
        raise KnobsError(
            f"{source}: knobs apply to the base IR of a workload, got variant {ir.variant!r}"
        )
    if not isinstance(data, dict):
        raise KnobsError(f"{source}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise KnobsError(f"{source}: unknown key(s) {unknown}; expected some of {list(KEYS)}")
    variant = data.get("variant", "base")
    if not isinstance(variant, str):
        raise KnobsError(f"{_where(source, 'variant')}: expected a string, got {variant!r}")
    try:
        ir = apply_variant(ir, variant)
    except KeyError as exc:
        raise KnobsError(
            f"{_where(source, 'variant')}: unknown rewrite {exc.args[0]!r}; "
            f"known: base, {', '.join(REWRITES)}"
        ) from None
    except ValueError as exc:
        raise KnobsError(
            f"{_where(source, 'variant')}: rewrite {exc.args[0]!r} does not apply to this kernel"
        ) from None
    order = data.get("loop_order", list(ir.loop_order))
    if not isinstance(order, list) or not all(isinstance(e, str) for e in order):
        raise KnobsError(
            f"{_where(source, 'loop_order')}: expected a list of strings like 'd0.block'"
        )
    blocks = dict(ir.ltiles_per_block)
    given_blocks = data.get("ltiles_per_block", {})
    if not isinstance(given_blocks, dict):
        raise KnobsError(f"{_where(source, 'ltiles_per_block')}: expected an object {{dim: int}}")
    for dim, n in given_blocks.items():
        if dim not in ir.dim:
            raise KnobsError(
                f"{_where(source, f'ltiles_per_block.{dim}')}: unknown dim; the IR has {list(ir.dim)}"
            )
        if isinstance(n, bool) or not isinstance(n, int):
            raise KnobsError(
                f"{_where(source, f'ltiles_per_block.{dim}')}: expected an int, got {n!r}"
            )
        blocks[dim] = n
    scopes = {b: dict(s) for b, s in ir.buffer_scopes.items()}
    given_scopes = data.get("buffer_scopes", {})
    if not isinstance(given_scopes, dict):
        raise KnobsError(
            f"{_where(source, 'buffer_scopes')}: expected an object {{buffer: {{dim: scope}}}}"
        )
    for buf, dims in given_scopes.items():
        key = f"buffer_scopes.{buf}"
        if buf not in ir.buffer:
            raise KnobsError(
                f"{_where(source, key)}: unknown buffer; variant {ir.variant!r} has {list(ir.buffer)}"
            )
        if not isinstance(dims, dict):
            raise KnobsError(f"{_where(source, key)}: expected an object {{dim: scope}}")
        for dim, value in dims.items():
            if dim not in ir.dim:
                raise KnobsError(
                    f"{_where(source, f'{key}.{dim}')}: unknown dim; the IR has {list(ir.dim)}"
                )
            try:
                scopes[buf][dim] = Scope(value)
            except ValueError:
                raise KnobsError(
                    f"{_where(source, f'{key}.{dim}')}: {value!r} is not one of "
                    f"{[s.value for s in Scope]}"
                ) from None
    return ir.with_knobs(order, blocks, scopes)


def read_knobs(path: str | Path, base: KernelIR | Workload | str | Path) -> KernelIR:
    """``ir_from_knobs`` on a knobs.json file, errors naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise KnobsError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise KnobsError(f"{path}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    return ir_from_knobs(base, data, source=str(path))
