"""The neuronx-cc options that change what the cost model should assume.

A program passes its compiler options as ``device.neuron.compiler_args``;
the same strings reach the simulator so that it models the compiled kernel
the hardware would run. Only options with a modelled effect are read;
every other option is accepted and ignored.

- ``enable-instruction-scheduling=false``: the compiler's instruction
  scheduler is off, so each engine runs its instructions in program order.
  On (the default), an instruction may fill an earlier idle gap of its
  engine once its operands are ready.
- ``--disable-dge``: no descriptor generation on the device. Every DMA whose
  addresses are known at compile time carries descriptors the host computed
  before the run (the DGE reference, aws-neuron-sdk
  nki/deep-dives/nki-dge.rst @f252115: mode ``none``, "no on-device generation
  is needed", the lowest per-transfer latency); a DMA whose addresses come from
  the device at run time still needs software DGE. ``--enable-dge`` turns it back
  on. The public Trn1 measurements this model is calibrated against were
  compiled with it: AccelOpt's NKIBench runner passes ``--disable-dge
  --logical-nc-config=1`` (zhang677/AccelOpt accelopt/kernel_wrapper.py
  @0c52ac7) and the CS152 lab kernels set it in ``NEURON_CC_FLAGS``.

The options are recognised however they are spelled in the arguments: bare
(``enable-instruction-scheduling=false``), as a flag
(``--enable-instruction-scheduling=false``) or inside a pass-through option
(``--internal-backend-options=--enable-instruction-scheduling=false``,
possibly quoted and among other options). The last occurrence wins.
A kernel's own ``NEURON_CC_FLAGS`` (``os.environ["NEURON_CC_FLAGS"] = ...`` at
import, as the neuronx-cc driver reads it when the kernel compiles) are read
after the command line's (``kernelopt.sim.runner``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kernelopt.sim.trace import Instruction

_SCHEDULING = re.compile(r"(?<![\w-])-{0,2}enable-instruction-scheduling\s*=\s*['\"]?(\w+)")
_DGE = re.compile(r"(?<![\w-])-{0,2}(enable|disable)-dge(?![\w-])")
_FALSE = frozenset({"false", "0", "no", "off"})
_TRUE = frozenset({"true", "1", "yes", "on"})


@dataclass(frozen=True)
class CompilerOptions:
    instruction_scheduling: bool = True
    descriptor_generation: bool = True  # off with --disable-dge


def compiler_options(args: Iterable[str] = ()) -> CompilerOptions:
    """The modelled options in ``args`` (neuronx-cc command-line or pipeline options)."""
    scheduling = dge = True
    for arg in args:
        for match in _DGE.finditer(str(arg)):
            dge = match.group(1) == "enable"
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
    return CompilerOptions(instruction_scheduling=scheduling, descriptor_generation=dge)


def precomputed_descriptors(trace: tuple[Instruction, ...]) -> tuple[Instruction, ...]:
    """``trace`` compiled with ``--disable-dge``: every DMA the host can describe
    before the run carries pre-computed descriptors; software DGE stays where the
    addresses are only known on the device (or the kernel asked for it)."""
    return tuple(
        replace(ins, precomputed_descriptors=True)
        if ins.engine == "dma" and not ins.software_dge and not ins.precomputed_descriptors
        else ins
        for ins in trace
    )
