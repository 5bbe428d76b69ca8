"""rmsnorm(x @ w + z) * g with x [4096, 2048], w [2048, 2048], z [4096, 2048], g [2048],
eps 1e-5, fp32 (NKIBench's matmul_add_rmsnorm M4096 N2048 K2048)."""

import numpy as np

INPUT_SPECS = {
    "x": ((4096, 2048), "float32"),
    "w": ((2048, 2048), "float32"),
    "z": ((4096, 2048), "float32"),
    "g": ((2048,), "float32"),
}
KERNEL_KWARGS = {"eps": 1e-5}


def f_numpy(x, w, z, g, eps):
    y = x @ w + z
    rms = np.sqrt(np.mean(y**2, axis=-1, keepdims=True) + eps)
    return y * g / rms
