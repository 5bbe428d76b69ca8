"""out = rmsnorm(x) @ w: each row of x scaled by 1 / sqrt(mean(x^2) + eps), then a matmul.

Written as ``rs * (x @ w)``, the same math: scaling row m of x by rs[m] scales
row m of the product by it. The [P, 1] column ``rs`` (one value per row of x
and of the output) is the last tensor_scalar's operand, so the transposes and
matmuls do not wait for the norm, and the scale can read the PSUM accumulator
(the FusedDrain rewrite). Scaling x first (the form in docs/llm-operators.md)
puts the norm, a TensorE transpose and a PSUM copy on every matmul's path.
"""

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorReduce, NKITensorScalar, NKITranspose

M, K, N = 1024, 1024, 2048
EPS = 1e-6


def f_nkigym(x, w):
    sq = NKIActivation(op="square")(data=x)
    ss = NKITensorReduce(op="add", axis=1)(data=sq)
    ms = NKITensorScalar(op0="multiply", operand0=1.0 / x.shape[1], op1="add", operand1=EPS)(
        data=ss
    )
    rs = NKIActivation(op="rsqrt")(data=ms)
    xt = NKITranspose()(data=x)
    mm = NKIMatmul()(stationary=xt, moving=w)
    out = NKITensorScalar(op0="multiply", operand0=rs)(data=mm)
    return out


def f_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    rs = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + EPS)
    return (x * rs) @ w.astype(np.float32)


INPUT_SPECS = {"x": ((M, K), "bfloat16"), "w": ((K, N), "bfloat16")}
