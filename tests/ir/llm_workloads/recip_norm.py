"""A reciprocal-based row norm: x / (mean(x^2) + eps), the reciprocal on VectorE."""

import numpy as np

from kernelopt.ir import NKIActivation, NKIReciprocal, NKITensorReduce, NKITensorScalar

EPS = 1e-3


def f_nkigym(x):
    ss = NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=x))
    inv = NKIReciprocal()(
        data=NKITensorScalar(op0="multiply", operand0=1.0 / x.shape[1], op1="add", operand1=EPS)(
            data=ss
        )
    )
    out = NKITensorScalar(op0="multiply", operand0=inv)(data=x)
    return out


def f_numpy(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    return x / (np.mean(x * x, axis=1, keepdims=True) + EPS)


INPUT_SPECS = {"x": ((2048, 1024), "bfloat16")}
SMALL_SPECS = {"x": ((256, 1024), "bfloat16")}
