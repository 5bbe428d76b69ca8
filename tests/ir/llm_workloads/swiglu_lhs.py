"""silu(x @ w_gate) * (x @ w_up) with x untransposed and fp32 weights cast by nothing: bf16 all."""

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorTensor, NKITranspose


def f_nkigym(x, w_gate, w_up):
    xt = NKITranspose()(data=x)
    act = NKIActivation(op="silu")(data=NKIMatmul()(stationary=xt, moving=w_gate))
    out = NKITensorTensor(op="multiply")(data1=act, data2=NKIMatmul()(stationary=xt, moving=w_up))
    return out


def f_numpy(x: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    g = x @ w_gate.astype(np.float32)
    return g / (1.0 + np.exp(-g)) * (x @ w_up.astype(np.float32))


INPUT_SPECS = {
    "x": ((1024, 512), "bfloat16"),
    "w_gate": ((512, 1536), "bfloat16"),
    "w_up": ((512, 1536), "bfloat16"),
}
SMALL_SPECS = {
    "x": ((256, 256), "bfloat16"),
    "w_gate": ((256, 512), "bfloat16"),
    "w_up": ((256, 512), "bfloat16"),
}
