"""out = gelu(lhsT.T @ rhs): a matmul whose result feeds a ScalarE activation."""

import math

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul


def f_nkigym(lhsT, rhs):
    mm = NKIMatmul()(stationary=lhsT, moving=rhs)
    out = NKIActivation(op="gelu")(data=mm)
    return out


def f_numpy(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    x = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(np.float32)


K, M, N = 1024, 1024, 2048
INPUT_SPECS = {"lhsT": ((K, M), "bfloat16"), "rhs": ((K, N), "bfloat16")}
