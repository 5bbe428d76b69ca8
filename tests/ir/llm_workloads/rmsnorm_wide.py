"""The hidden example's slow-form rmsnorm @ w at a wider shape: M=1024, K=2048, N=512."""

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


INPUT_SPECS = {"x": ((1024, 2048), "bfloat16"), "w": ((2048, 512), "bfloat16")}
SMALL_SPECS = {"x": ((256, 512), "bfloat16"), "w": ((512, 512), "bfloat16")}
