"""layer_norm(x) @ w with the variance as E[x^2] - E[x]^2 and the normalisation as one
tensor_scalar whose two column operands are given in the call (subtract the mean,
multiply by the reciprocal deviation)."""

import numpy as np

from kernelopt.ir import (
    NKIActivation,
    NKIMatmul,
    NKITensorReduce,
    NKITensorScalar,
    NKITensorTensor,
    NKITranspose,
)

N = 1024  # the row length the means divide by (INPUT_SPECS' columns)


def f_nkigym(x, w):
    inv = 1.0 / x.shape[1]
    mean = NKITensorScalar(op0="multiply", operand0=inv)(
        data=NKITensorReduce(op="add", axis=1)(data=x)
    )
    msq = NKITensorScalar(op0="multiply", operand0=inv)(
        data=NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    )
    var = NKITensorTensor(op="subtract")(data1=msq, data2=NKIActivation(op="square")(data=mean))
    rstd = NKIActivation(op="rsqrt", bias=1e-5)(data=var)
    xn = NKITensorScalar(op0="subtract", op1="multiply")(data=x, operand0=mean, operand1=rstd)
    return NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)


def f_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    mean = x.mean(axis=1, keepdims=True)
    var = np.square(x).mean(axis=1, keepdims=True) - np.square(mean)
    return ((x - mean) / np.sqrt(var + 1e-5)) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((1024, N), "bfloat16"), "w": ((N, 512), "bfloat16")}
SMALL_SPECS = {"x": ((256, 256), "bfloat16"), "w": ((256, 256), "bfloat16")}
