"""out = silu(x @ w_gate) * (x @ w_up): the gated activation of an LLM MLP.

``xT`` is x transposed (K on the partition axis, as TensorE contracts it), so
both matmuls read one loaded operand. The down projection is left out.
"""

import numpy as np

from kernelopt.ir import NKIActivation, NKIMatmul, NKITensorTensor

M, K, N = 1024, 1024, 1024


def f_nkigym(xT, w_gate, w_up):
    gate = NKIMatmul()(stationary=xT, moving=w_gate)
    up = NKIMatmul()(stationary=xT, moving=w_up)
    act = NKIActivation(op="silu")(data=gate)
    out = NKITensorTensor(op="multiply")(data1=act, data2=up)
    return out


def f_numpy(xT: np.ndarray, w_gate: np.ndarray, w_up: np.ndarray) -> np.ndarray:
    x = xT.astype(np.float32).T
    gate = x @ w_gate.astype(np.float32)
    up = x @ w_up.astype(np.float32)
    return gate / (1.0 + np.exp(-gate)) * up


INPUT_SPECS = {
    "xT": ((K, M), "bfloat16"),
    "w_gate": ((K, N), "bfloat16"),
    "w_up": ((K, N), "bfloat16"),
}
