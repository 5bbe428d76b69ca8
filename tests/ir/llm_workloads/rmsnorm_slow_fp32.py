"""The slow-form rmsnorm @ w with fp32 inputs (fp32 matmuls run at a quarter rate), other shapes."""

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

EPS = 1e-5


def f_nkigym(x, w):
    sq = NKIActivation(op="square")(data=x)
    ss = NKITensorReduce(op="add", axis=1)(data=sq)
    ms = NKITensorScalar(op0="multiply", operand0=1.0 / x.shape[1], op1="add", operand1=EPS)(
        data=ss
    )
    rs = NKIActivation(op="rsqrt")(data=ms)
    xn = NKITensorScalar(op0="multiply", operand0=rs)(data=x)
    xt = NKITranspose()(data=xn)
    out = NKIMatmul()(stationary=xt, moving=w)
    return out


def f_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    rs = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    return (x * rs) @ w


INPUT_SPECS = {"x": ((512, 512), "float32"), "w": ((512, 1536), "float32")}
SMALL_SPECS = {"x": ((256, 256), "float32"), "w": ((256, 1024), "float32")}
