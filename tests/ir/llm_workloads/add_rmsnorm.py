"""rmsnorm(x + residual): a residual add, then the row norm (no matmul)."""

import numpy as np

from kernelopt.ir import NKIActivation, NKITensorReduce, NKITensorScalar, NKITensorTensor

EPS = 1e-6


def f_nkigym(x, residual):
    h = NKITensorTensor(op="add")(data1=x, data2=residual)
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=h))
    rs = NKIActivation(op="rsqrt")(
        data=NKITensorScalar(op0="multiply", operand0=1.0 / x.shape[1], op1="add", operand1=EPS)(
            data=ss
        )
    )
    out = NKITensorScalar(op0="multiply", operand0=rs)(data=h)
    return out


def f_numpy(x: np.ndarray, residual: np.ndarray) -> np.ndarray:
    h = x.astype(np.float32) + residual.astype(np.float32)
    return h / np.sqrt(np.mean(h * h, axis=1, keepdims=True) + EPS)


INPUT_SPECS = {"x": ((1024, 2048), "bfloat16"), "residual": ((1024, 2048), "bfloat16")}
SMALL_SPECS = {"x": ((256, 1024), "bfloat16"), "residual": ((256, 1024), "bfloat16")}
