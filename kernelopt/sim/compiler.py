"""The neuronx-cc options that change what the cost model should assume.

A program passes its compiler options as ``device.neuron.compiler_args``;
the same strings reach the simulator so that it models the compiled kernel
the hardware would run. Only options with a modelled effect are read;
every other option is accepted and ignored.

- ``enable-instruction-scheduling=false``: the compiler's instruction
  scheduler is off, so each engine runs its instructions in program order.
  On (the default), an instruction may fill an earlier idle gap of its
  engine once its operands are ready.

The option is recognised however it is spelled in the arguments: bare
(``enable-instruction-scheduling=false``), as a flag
(``--enable-instruction-scheduling=false``) or inside a pass-through option
(``--internal-backend-options=--enable-instruction-scheduling=false``,
possibly quoted and among other options). The last occurrence wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_SCHEDULING = re.compile(r"(?<![\w-])-{0,2}enable-instruction-scheduling\s*=\s*['\"]?(\w+)")
_FALSE = frozenset({"false", "0", "no", "off"})
_TRUE = frozenset({"true", "1", "yes", "on"})


@dataclass(frozen=True)
class CompilerOptions:
    instruction_scheduling: bool = True


def compiler_options(args: Iterable[str] = ()) -> CompilerOptions:
    """The modelled options in ``args`` (neuronx-cc command-line or pipeline options)."""
    scheduling = True
    for arg in args:
        for match in _SCHEDULING.finditer(str(arg)):
            value = match.group(1).lower()
            if value in _FALSE:
                scheduling = False
            elif value in _TRUE:
                scheduling = True
            else:
                raise ValueError(
                    f"enable-instruction-scheduling expects true or false, got {value!r}"
                )
    return CompilerOptions(instruction_scheduling=scheduling)
