"""out = lhsT.T @ rhs: the stationary operand arrives already transposed."""

import numpy as np

from kernelopt.ir import NKIMatmul


def f_nkigym(lhsT, rhs):
    out = NKIMatmul()(stationary=lhsT, moving=rhs)
    return out


def f_numpy(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhsT.T @ rhs


K, M, N = 2048, 2048, 2048
INPUT_SPECS = {"lhsT": ((K, M), "bfloat16"), "rhs": ((K, N), "bfloat16")}
