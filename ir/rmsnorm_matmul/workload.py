"""out = rmsnorm(x) @ w: each row of x scaled by 1 / sqrt(mean(x^2) + eps), then a matmul.

The [P, 1] column ``rs`` (one value per row) is the tensor_scalar's operand:
every row's sum of squares must be complete before the row is scaled.
"""

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

M, K, N = 512, 1024, 1024
EPS = 1e-6


def f_nkigym(x, w):
    sq = NKIActivation(op="square")(data=x)
    ss = NKITensorReduce(op="add", axis=1)(data=sq)
    ms = NKITensorScalar(op0="multiply", operand0=1.0 / x.shape[1], op1="add", operand1=EPS)(data=ss)
    rs = NKIActivation(op="rsqrt")(data=ms)
    xn = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    xt = NKITranspose()(data=xn)
    out = NKIMatmul()(stationary=xt, moving=w)
    return out


def f_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    rs = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    return (x * rs) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((M, K), "bfloat16"), "w": ((K, N), "bfloat16")}
