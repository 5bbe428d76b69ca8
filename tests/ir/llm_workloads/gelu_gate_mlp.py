"""gelu(x @ w_gate) * (x @ w_up) with x given untransposed: one transpose feeds both matmuls."""

import math

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorTensor, NKITranspose


def f_nkigym(x, w_gate, w_up):
    xt = NKITranspose()(data=x)
    gate = NKIMatmul()(stationary=xt, moving=w_gate)
    up = NKIMatmul()(stationary=xt, moving=w_up)
    out = NKITensorTensor(op="multiply")(data1=NKIActivation(op="gelu")(data=gate), data2=up)
    return out


def f_numpy(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    g = x @ w_gate.astype(np.float32)
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * g * (1.0 + erf(g / math.sqrt(2.0)))) * (x @ w_up.astype(np.float32))


INPUT_SPECS = {
    "x": ((512, 1024), "bfloat16"),
    "w_gate": ((1024, 1024), "bfloat16"),
    "w_up": ((1024, 1024), "bfloat16"),
}
SMALL_SPECS = {
    "x": ((256, 256), "bfloat16"),
    "w_gate": ((256, 512), "bfloat16"),
    "w_up": ((256, 512), "bfloat16"),
}
