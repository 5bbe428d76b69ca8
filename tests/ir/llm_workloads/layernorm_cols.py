"""layernorm with mean and variance columns, written as a centred copy then a scale (fp32 input)."""

import numpy as np

from kernelopt.ir import NKIActivation, NKITensorReduce, NKITensorScalar

EPS = 1e-5


def f_nkigym(x):
    n = x.shape[1]
    mean = NKITensorScalar(op0="multiply", operand0=1.0 / n)(
        data=NKITensorReduce(op="add", axis=1)(data=x)
    )
    xc = NKITensorScalar(op0="subtract", operand0=mean)(data=x)
    var = NKITensorScalar(op0="multiply", operand0=1.0 / n, op1="add", operand1=EPS)(
        data=NKITensorReduce(op="add", axis=1)(data=NKIActivation(op="square")(data=xc))
    )
    rstd = NKIActivation(op="rsqrt")(data=var)
    out = NKITensorScalar(op0="multiply", operand0=rstd)(data=xc)
    return out


def f_numpy(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    xc = x - x.mean(axis=1, keepdims=True)
    return xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + EPS)


INPUT_SPECS = {"x": ((1024, 1024), "float32")}
SMALL_SPECS = {"x": ((256, 1024), "float32")}
