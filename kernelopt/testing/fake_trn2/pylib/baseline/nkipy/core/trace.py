"""Fake ``nkipy.core.trace``: ``NKIPyKernel.trace(fn)`` wraps a numpy function;
``specialize(*args, **kwargs)`` traces it on the arguments into ``_code``, whose
``inputs`` / ``outputs`` are tensors with ``name``, ``shape`` and ``dtype``.

Sources: aws-neuron/nkipy ``runtime/execute.py``@66974b2 (``kernel.specialize(*args,
**kwargs)``, ``kernel._code``, ``ir.inputs`` / ``ir.outputs`` with ``.name``,
``.shape``, ``.dtype``, ``kernel.func``, ``kernel.__name__``) and ``core/compile.py``
(``trace = NKIPyKernel.trace``). The tensors' names and the traced output dtype
(numpy's result type of the inputs): unverified.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class TracedCode:
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]


class NKIPyKernel:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.func = fn
        self.__name__ = fn.__name__
        self._code: TracedCode | None = None

    @classmethod
    def trace(cls, fn: Callable[..., Any]) -> NKIPyKernel:
        return cls(fn)

    def specialize(self, *args: Any, **kwargs: Any) -> None:
        bound = inspect.signature(self.func).bind(*args, **kwargs)
        arrays = {k: np.asarray(v) for k, v in bound.arguments.items()}
        result = self.func(**{k: v.astype(np.float32) for k, v in arrays.items()})
        results = result if isinstance(result, tuple | list) else (result,)
        dtype = np.result_type(*(v.dtype for v in arrays.values()))
        self._code = TracedCode(
            inputs=tuple(Tensor(k, tuple(v.shape), v.dtype) for k, v in arrays.items()),
            outputs=tuple(
                Tensor(f"output{i}", tuple(np.shape(r)), dtype) for i, r in enumerate(results)
            ),
        )
