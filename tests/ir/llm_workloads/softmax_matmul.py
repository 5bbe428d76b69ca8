"""softmax(s) @ v, attention's second product: the row normalisation precedes the transpose."""

import numpy as np

from kernelopt.ir import (
    NKIActivation,
    NKIMatmul,
    NKIReciprocal,
    NKITensorReduce,
    NKITensorScalar,
    NKITranspose,
)


def f_nkigym(s, v):
    neg_max = NKITensorReduce(op="maximum", axis=1, negate=True)(data=s)
    e = NKIActivation(op="exp", bias=neg_max)(data=s)
    r = NKIReciprocal()(data=NKITensorReduce(op="add", axis=1)(data=e))
    p = NKITensorScalar(op0="multiply", operand0=r)(data=e)
    out = NKIMatmul()(stationary=NKITranspose()(data=p), moving=v)
    return out


def f_numpy(s: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = s.astype(np.float32)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v.astype(np.float32)


INPUT_SPECS = {"s": ((512, 1024), "bfloat16"), "v": ((1024, 512), "bfloat16")}
SMALL_SPECS = {"s": ((256, 256), "bfloat16"), "v": ((256, 512), "bfloat16")}
