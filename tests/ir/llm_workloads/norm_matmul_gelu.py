"""gelu(rmsnorm(x) @ w): norm (slow form) -> matmul -> activation."""

import math

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

EPS = 1e-6


def f_nkigym(x, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt")(
        data=NKITensorScalar(op0="multiply", operand0=1.0 / x.shape[1], op1="add", operand1=EPS)(
            data=ss
        )
    )
    xn = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    mm = NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)
    out = NKIActivation(op="gelu")(data=mm)
    return out


def f_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    h = (x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)) @ w.astype(np.float32)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))).astype(np.float32)


INPUT_SPECS = {"x": ((512, 1024), "bfloat16"), "w": ((1024, 2048), "bfloat16")}
SMALL_SPECS = {"x": ((256, 256), "bfloat16"), "w": ((256, 1024), "bfloat16")}
