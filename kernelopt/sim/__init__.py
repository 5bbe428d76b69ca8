"""kernelopt's NKI simulator: numpy numerics plus a Trainium2 cost model.

``run_kernel`` executes a kernel file and returns outputs, trace and profile;
``check_kernel`` compares it against a workload's numpy oracle and never
raises for a bad kernel.
"""

from kernelopt.sim.check import SimReport, check_kernel
from kernelopt.sim.errors import SimError
from kernelopt.sim.runner import SimRun, run_kernel
from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params

__all__ = [
    "DEFAULT_PARAMS",
    "SimError",
    "SimReport",
    "SimRun",
    "Trn2Params",
    "check_kernel",
    "run_kernel",
]
