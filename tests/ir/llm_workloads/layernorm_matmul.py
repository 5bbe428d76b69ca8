"""layernorm(x) @ w in the slow form: the centring and the scale both precede the transpose."""

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

EPS = 1e-5


def f_nkigym(x, w):
    n = x.shape[1]
    neg_mean = NKITensorScalar(op0="multiply", operand0=-1.0 / n)(
        data=NKITensorReduce(op="add", axis=1)(data=x)
    )
    var = NKITensorScalar(op0="multiply", operand0=1.0 / n, op1="add", operand1=EPS)(
        data=NKITensorReduce(op="add", axis=1)(
            data=NKIActivation(op="square", bias=neg_mean)(data=x)
        )
    )
    rstd = NKIActivation(op="rsqrt")(data=var)
    xn = NKITensorScalar(op0="add", operand0=neg_mean, op1="multiply", operand1=rstd)(data=x)
    out = NKIMatmul()(stationary=NKITranspose()(data=xn), moving=w)
    return out


def f_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    xc = x - x.mean(axis=1, keepdims=True)
    xn = xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + EPS)
    return xn @ w.astype(np.float32)


INPUT_SPECS = {"x": ((512, 1024), "bfloat16"), "w": ((1024, 1024), "bfloat16")}
SMALL_SPECS = {"x": ((256, 256), "bfloat16"), "w": ((256, 1024), "bfloat16")}
