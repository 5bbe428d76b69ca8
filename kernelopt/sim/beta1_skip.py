"""Beta-1 ``mask=`` given as a Python truth value: ``mask=(m == 0)`` with ``m`` a loop
index the simulator runs as an int. The NKI docs call ``mask`` "a compile-time constant
predicate that controls whether/how this instruction is executed": true, the call runs
unmasked; false, nothing is issued and the call's result is ``SKIPPED``, which an
assignment or ``+=`` then ignores (the public LoRA kernel guards its first-iteration
work so). An index-expression mask that holds for no index (``t * 128 + i_p < n`` on a
row tile wholly past ``n``) is false the same way: the docs describe the mask only as
what runs, and the masked-out part of a call is neither moved nor computed; the
public kernel that needs it is aws-neuron/nki-samples
``src/nki_samples/reference/allocated_fused_linear.py`` @23835a5, whose loop over
pairs of 128-row tiles runs its second tile wholly masked when the row count holds an
odd number of tiles."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from kernelopt.sim.indexing import Mask


class Skipped:
    """The result of a call whose ``mask=`` was false: nothing was computed."""

    def __repr__(self) -> str:
        return "<the result of a call whose mask= was false: nothing was computed>"


SKIPPED = Skipped()


def constant(mask: Any) -> bool | None:
    """A mask that is a plain truth value or keeps no index; None for any other mask."""
    if isinstance(mask, bool | np.bool_):
        return bool(mask)
    if isinstance(mask, Mask) and mask.is_box and mask.empty():
        return False
    return None


def skippable(call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` with a constant ``mask=`` applied: false returns ``SKIPPED``."""

    @functools.wraps(call)
    def run(*args: Any, **kwargs: Any) -> Any:
        held = constant(kwargs.get("mask"))
        if held is False:
            return SKIPPED
        if held is True:
            kwargs["mask"] = None
        return call(*args, **kwargs)

    return run


def make_skippable(module: types.ModuleType, names: tuple[str, ...] | None = None) -> None:
    """Wrap the module's functions (or ``names``) that a kernel may call with ``mask=``."""
    for name in names if names is not None else tuple(vars(module)):
        value = getattr(module, name)
        if isinstance(value, types.FunctionType | types.MethodType | functools.partial):
            setattr(module, name, skippable(value))
