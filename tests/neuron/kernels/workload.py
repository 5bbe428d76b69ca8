"""A small lhsT.T @ rhs so the fake toolchain compiles and runs it in moments."""

import numpy as np

from kernelopt.ir import NKIMatmul


def f_nkigym(lhsT, rhs):
    return NKIMatmul()(stationary=lhsT, moving=rhs)


def f_numpy(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhsT.T @ rhs


K, M, N = 256, 128, 512
INPUT_SPECS = {"lhsT": ((K, M), "bfloat16"), "rhs": ((K, N), "bfloat16")}
