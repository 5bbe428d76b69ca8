"""out = lhs @ rhs: the stationary operand needs a transpose first."""

import numpy as np

from kernelopt.ir import NKIMatmul, NKITranspose


def f_nkigym(lhs, rhs):
    lhs_T = NKITranspose()(data=lhs)
    out = NKIMatmul()(stationary=lhs_T, moving=rhs)
    return out


def f_numpy(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhs @ rhs


M, K, N = 2048, 2048, 2048
INPUT_SPECS = {"lhs": ((M, K), "bfloat16"), "rhs": ((K, N), "bfloat16")}
