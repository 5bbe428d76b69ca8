"""A post-norm block: h = xT.T @ w + r, then h / sqrt(mean(h * h) + eps) (a matmul's
rows normalised: the square as a tensor_tensor, sqrt with scale and bias on ScalarE,
the division by a column)."""

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITensorTensor


def f_nkigym(xT, w, r):
    h = NKITensorTensor(op="add")(data1=NKIMatmul()(stationary=xT, moving=w), data2=r)
    ss = NKITensorReduce(op="add", axis=1)(data=NKITensorTensor(op="multiply")(data1=h, data2=h))
    d = NKIActivation(op="sqrt", scale=1.0 / h.shape[1], bias=1e-6)(data=ss)
    return NKITensorScalar(op0="divide", operand0=d)(data=h)


def f_numpy(xT: np.ndarray, w: np.ndarray, r: np.ndarray) -> np.ndarray:
    h = xT.astype(np.float32).T @ w.astype(np.float32) + r.astype(np.float32)
    return h / np.sqrt(np.square(h).mean(axis=1, keepdims=True) + 1e-6)


INPUT_SPECS = {
    "xT": ((1024, 1024), "bfloat16"),
    "w": ((1024, 1024), "bfloat16"),
    "r": ((1024, 1024), "bfloat16"),
}
SMALL_SPECS = {
    "xT": ((256, 256), "bfloat16"),
    "w": ((256, 256), "bfloat16"),
    "r": ((256, 256), "bfloat16"),
}
