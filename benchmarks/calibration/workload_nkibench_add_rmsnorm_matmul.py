"""rmsnorm(x + z) * g @ w with x, z [4096, 1024], w [1024, 2048], g [1024], eps 1e-5, fp32
(NKIBench's add_rmsnorm_matmul M4096 N2048 K1024)."""

import numpy as np

INPUT_SPECS = {
    "x": ((4096, 1024), "float32"),
    "w": ((1024, 2048), "float32"),
    "z": ((4096, 1024), "float32"),
    "g": ((1024,), "float32"),
}
KERNEL_KWARGS = {"eps": 1e-5}


def f_numpy(x, w, z, g, eps):
    y = x + z
    mean = np.sum(np.square(y) / y.shape[1], axis=1, keepdims=True)
    return (y / np.sqrt(mean + eps) * g) @ w
