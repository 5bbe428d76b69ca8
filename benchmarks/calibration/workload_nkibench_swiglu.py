"""SwiGLU MLP (silu(x @ w_gate) * (x @ w_up)) @ w_down with x [4096, 1024], w_up and w_gate
[1024, 3072], w_down [3072, 1024], fp32 (NKIBench's swiglu M4096 N3072 K1024)."""

import numpy as np

INPUT_SPECS = {
    "x": ((4096, 1024), "float32"),
    "w_up": ((1024, 3072), "float32"),
    "w_down": ((3072, 1024), "float32"),
    "w_gate": ((1024, 3072), "float32"),
}


def f_numpy(x, w_up, w_down, w_gate):
    gate = x @ w_gate
    return (gate / (1 + np.exp(-gate)) * (x @ w_up)) @ w_down
