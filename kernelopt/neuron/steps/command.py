"""The steps' command line: one subcommand per step; a StepError becomes the
message on stderr and exit code 1."""

from __future__ import annotations

import argparse
import sys

from kernelopt.neuron.facts import PROFILERS
from kernelopt.neuron.steps.baremetal import baremetal_step
from kernelopt.neuron.steps.common import StepError
from kernelopt.neuron.steps.compile_kernel import CURRENT_API, OLDER_API, compile_step
from kernelopt.neuron.steps.inputs import inputs_step
from kernelopt.neuron.steps.outputs import check_outputs_step
from kernelopt.neuron.steps.probe import probe_step
from kernelopt.neuron.steps.reference import compile_reference_step
from kernelopt.neuron.steps.run import run_step


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m kernelopt.neuron.steps")
    sub = top.add_subparsers(dest="step", required=True)
    p = sub.add_parser("probe", help="which SDK pieces this environment has")
    p.add_argument("--tools", default=",".join((*PROFILERS, "neuronx-cc")))
    c = sub.add_parser("compile", help="kernel -> NEFF")
    c.add_argument("--api", choices=(CURRENT_API, OLDER_API), required=True)
    c.add_argument("--kernel", required=True)
    c.add_argument("--workload", required=True)
    c.add_argument("--func")
    c.add_argument("--out", required=True)
    c.add_argument("--lnc", type=int, default=1)
    c.add_argument("--opt", type=int, default=2)
    c.add_argument("--compiler-arg", action="append", default=[])
    c.add_argument("--pipeline-option", action="append", default=[])
    b = sub.add_parser("compile-reference", help="f_numpy -> NEFF through nkipy")
    b.add_argument("--workload", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--lnc", type=int, default=1)
    i = sub.add_parser("inputs", help="the seeded inputs as raw-bytes files")
    i.add_argument("--workload", required=True)
    i.add_argument("--out", required=True)
    i.add_argument("--seed", type=int, default=0)
    o = sub.add_parser("check-outputs", help="a capture's saved outputs against f_numpy")
    o.add_argument("--neff", required=True)
    o.add_argument("--workload", required=True)
    o.add_argument("--saved", action="append", default=[], help="NAME=FILE, per output")
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--tolerance", type=float, default=1e-2)
    r = sub.add_parser("run", help="run, check and time a NEFF on the bound NeuronCore")
    r.add_argument("--neff", required=True)
    r.add_argument("--workload", required=True)
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--iterations", type=int, default=100)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--tolerance", type=float, default=1e-2)
    m = sub.add_parser("baremetal", help="compile, run and check a beta-1 kernel on the core")
    m.add_argument("--kernel", required=True)
    m.add_argument("--workload", required=True)
    m.add_argument("--func")
    m.add_argument("--out", required=True)
    m.add_argument("--lnc", type=int, default=1)
    m.add_argument("--opt", type=int, default=2)
    m.add_argument("--compiler-arg", action="append", default=[])
    m.add_argument("--warmup", type=int, default=10)
    m.add_argument("--iterations", type=int, default=100)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--tolerance", type=float, default=1e-2)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    steps = {
        "probe": probe_step,
        "compile": compile_step,
        "compile-reference": compile_reference_step,
        "run": run_step,
        "inputs": inputs_step,
        "check-outputs": check_outputs_step,
        "baremetal": baremetal_step,
    }
    try:
        steps[args.step](args)
    except StepError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return 0
