"""rmsnorm(x) @ w in the slow form: x is scaled by its row column BEFORE the transpose + matmul."""

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

EPS = 1e-6


def f_nkigym(x, w):
    k = x.shape[1]
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    rs = NKIActivation(op="rsqrt")(
        data=NKITensorScalar(op0="multiply", operand0=1.0 / k, op1="add", operand1=EPS)(data=ss)
    )
    out = NKIMatmul()(
        stationary=NKITranspose()(data=NKITensorScalar(op0="multiply", operand0=rs)(data=x)),
        moving=w,
    )
    return out


def f_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    rs = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    return (x * rs) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((1024, 1024), "bfloat16"), "w": ((1024, 1024), "bfloat16")}
SMALL_SPECS = {"x": ((256, 256), "bfloat16"), "w": ((256, 1024), "bfloat16")}
