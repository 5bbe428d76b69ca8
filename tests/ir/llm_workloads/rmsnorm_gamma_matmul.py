"""rms_norm(x) * gamma @ w with gamma given at x's full shape: an element-wise weight
between the norm and the transpose (tensor_tensor on two loaded tensors)."""

import numpy as np

from kernelopt.ir import (
    NKIActivation,
    NKIMatmul,
    NKITensorReduce,
    NKITensorScalar,
    NKITensorTensor,
    NKITranspose,
)


def f_nkigym(x, g, w):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    mean = NKITensorScalar(op0="multiply", operand0=1.0 / 1024, op1="add", operand1=1e-6)
    rs = NKIActivation(op="rsqrt")(data=mean(data=ss))
    xn = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    scaled = NKITensorTensor(op="multiply")(data1=xn, data2=g)
    return NKIMatmul()(stationary=NKITranspose()(data=scaled), moving=w)


def f_numpy(x: np.ndarray, g: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    rs = 1.0 / np.sqrt(np.square(x).sum(axis=1, keepdims=True) / 1024 + 1e-6)
    return (x * rs * g.astype(np.float32)) @ w.astype(np.float32)


INPUT_SPECS = {
    "x": ((1024, 1024), "bfloat16"),
    "g": ((1024, 1024), "bfloat16"),
    "w": ((1024, 1024), "bfloat16"),
}
SMALL_SPECS = {
    "x": ((256, 256), "bfloat16"),
    "g": ((256, 256), "bfloat16"),
    "w": ((256, 256), "bfloat16"),
}
