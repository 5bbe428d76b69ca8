"""out = softmax(x) along each row: exp(x - max) / sum(exp(x - max)).

The row maximum and the row sum are [P, 1] columns: ``exp`` takes the
negated maximum as its bias, the final multiply takes 1 / sum as its operand.
"""

import numpy as np

from kernelopt.ir import NKIActivation, NKIReciprocal, NKITensorReduce, NKITensorScalar

M, N = 1024, 2048


def f_nkigym(x):
    neg_max = NKITensorReduce(op="maximum", axis=1, negate=True)(data=x)
    e = NKIActivation(op="exp", bias=neg_max)(data=x)
    s = NKITensorReduce(op="add", axis=1)(data=e)
    r = NKIReciprocal()(data=s)
    out = NKITensorScalar(op0="multiply", operand0=r)(data=e)
    return out


def f_numpy(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


INPUT_SPECS = {"x": ((M, N), "bfloat16")}
