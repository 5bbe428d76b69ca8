"""Row absmax scaling, as before an int8 cast: x * (127 / max(max|x|, 1e-6)) per row
(abs on ScalarE, a plain max reduction, a clamp by a number, a reciprocal, then one
tensor_scalar multiplying by the column and by a number)."""

import numpy as np

from kernelopt.ir import NKIActivation, NKIReciprocal, NKITensorReduce, NKITensorScalar


def f_nkigym(x):
    top = NKITensorReduce(op="maximum", axis=1)(data=NKIActivation(op="abs")(data=x))
    inv = NKIReciprocal()(data=NKITensorScalar(op0="maximum", operand0=1e-6)(data=top))
    scale = NKITensorScalar(op0="multiply", operand0=inv, op1="multiply", operand1=127.0)
    return scale(data=x)


def f_numpy(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    top = np.maximum(np.abs(x).max(axis=1, keepdims=True), 1e-6)
    return x / top * 127.0


INPUT_SPECS = {"x": ((1024, 4096), "bfloat16")}
SMALL_SPECS = {"x": ((256, 512), "bfloat16")}
