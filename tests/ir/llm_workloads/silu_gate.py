"""silu(gate) * up on given activations: an element-wise gated unit with no matmul."""

import numpy as np

from kernelopt.ir import NKIActivation, NKITensorTensor


def f_nkigym(gate, up):
    act = NKIActivation(op="silu")(data=gate)
    out = NKITensorTensor(op="multiply")(data1=act, data2=up)
    return out


def f_numpy(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    g = gate.astype(np.float32)
    return g / (1.0 + np.exp(-g)) * up.astype(np.float32)


INPUT_SPECS = {"gate": ((1024, 2048), "bfloat16"), "up": ((1024, 2048), "bfloat16")}
SMALL_SPECS = {"gate": ((256, 1024), "bfloat16"), "up": ((256, 1024), "bfloat16")}
