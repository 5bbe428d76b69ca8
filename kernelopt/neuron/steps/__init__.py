"""The steps that need the Neuron SDK, each run in its own process on the host,
in the Python environment it needs.

    python -m kernelopt.neuron.steps probe [--tools neuronx-cc,neuron-explorer,...]
    python -m kernelopt.neuron.steps compile --api API --kernel K --workload W --out DIR
        [--func F] [--lnc 1] [--opt 2] [--compiler-arg ARG ...] [--pipeline-option OPT ...]
    python -m kernelopt.neuron.steps compile-reference --workload W --out DIR [--lnc 1]
    python -m kernelopt.neuron.steps inputs --workload W --out DIR [--seed 0]
    python -m kernelopt.neuron.steps check-outputs --neff N --workload W --saved NAME=FILE ...
        [--seed 0] [--tolerance 0.01]
    python -m kernelopt.neuron.steps run --neff N --workload W [--warmup 10]
        [--iterations 100] [--seed 0] [--tolerance 0.01]
    python -m kernelopt.neuron.steps baremetal --kernel K --workload W --out DIR [--func F]
        [--lnc 1] [--opt 2] [--compiler-arg ARG ...] [--warmup 10] [--iterations 100]
        [--seed 0] [--tolerance 0.01]

`probe` reports which SDK pieces this environment has and the parameters of each
entry point kernelopt may call (the call shapes). `compile` turns the kernel into a
NEFF with the NKI compiler driver (``api`` "nki.compiler", in the shape the
signatures show) or ``neuronxcc.nki_standalone``, and leaves the compiler's
description of the NEFF's tensors beside it (tensors.json). `compile-reference`
compiles the workload's f_numpy through nkipy (the compiler baseline) in a fresh
folder of its own. `inputs` writes the seeded inputs as raw-bytes files for a
profiler capture; `check-outputs` compares the outputs a capture saved
(``--save-output``) with f_numpy (SDKs without nrtpy). `run` runs a NEFF with nrtpy on the bound
NeuronCore: the device-side benchmark, and the device's output of the measured run
compared with f_numpy on the seeded inputs. `baremetal` compiles and runs an NKI
beta-1 kernel on the bound NeuronCore with neuronxcc.nki.baremetal (SDK 2.22-2.27),
checks the outputs it returns against f_numpy and collects neuronxcc.nki.benchmark's
latency percentiles; its NEFF and trace stay in DIR. The driver runs these as subprocesses
so a compile can be killed at its timeout and a crash stays a record; the compile
steps run in the NKI environment, `run` in the nrtpy one (the two wheels cannot
share an environment). Nothing else in kernelopt imports the SDK.

Each step ends by printing one line ``KERNELOPT-STEP {json}``. One module per step
(probe, compile_kernel with nki_compiler / nki_standalone, reference, run, inputs,
outputs, baremetal), common.py for what they share, command.py for the command line.
"""

from kernelopt.neuron.steps.common import MARK, StepError
from kernelopt.neuron.steps.compile_kernel import jit_function_name

__all__ = ["MARK", "StepError", "jit_function_name"]
