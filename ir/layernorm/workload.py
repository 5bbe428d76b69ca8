"""out = (x - mean(x)) / sqrt(var(x) + eps) along each row (no affine weight or bias).

Three [P, 1] columns: the negated mean (a bias of the squared deviation and
the first operand of the final tensor_scalar), and 1 / sqrt(var + eps) (its
second operand).
"""

import numpy as np

from kernelopt.ir import NKIActivation, NKITensorReduce, NKITensorScalar

M, N = 1024, 2048
EPS = 1e-5


def f_nkigym(x):
    total = NKITensorReduce(op="add", axis=1)(data=x)
    neg_mean = NKITensorScalar(op0="multiply", operand0=-1.0 / x.shape[1])(data=total)
    dev2 = NKIActivation(op="square", bias=neg_mean)(data=x)
    var_sum = NKITensorReduce(op="add", axis=1)(data=dev2)
    var = NKITensorScalar(op0="multiply", operand0=1.0 / x.shape[1], op1="add", operand1=EPS)(
        data=var_sum
    )
    rstd = NKIActivation(op="rsqrt")(data=var)
    out = NKITensorScalar(op0="add", operand0=neg_mean, op1="multiply", operand1=rstd)(data=x)
    return out


def f_numpy(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS)


INPUT_SPECS = {"x": ((M, N), "bfloat16")}
