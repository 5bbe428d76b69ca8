"""softmax(x * s) along each row (attention scores scaled by 1 / sqrt(d)): exp's scale and bias."""

import numpy as np

from kernelopt.ir import NKIActivation, NKIReciprocal, NKITensorReduce, NKITensorScalar

SCALE = 0.125


def f_nkigym(x):
    neg_max = NKITensorScalar(op0="multiply", operand0=SCALE)(
        data=NKITensorReduce(op="maximum", axis=1, negate=True)(data=x)
    )
    e = NKIActivation(op="exp", scale=SCALE, bias=neg_max)(data=x)
    r = NKIReciprocal()(data=NKITensorReduce(op="add", axis=1)(data=e))
    out = NKITensorScalar(op0="multiply", operand0=r)(data=e)
    return out


def f_numpy(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float32) * SCALE
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


INPUT_SPECS = {"x": ((512, 4096), "bfloat16")}
SMALL_SPECS = {"x": ((256, 1024), "bfloat16")}
