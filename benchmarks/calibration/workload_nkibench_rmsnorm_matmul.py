"""rmsnorm(x) @ w with x [4096, 1024], w [1024, 2048], fp32 (NKIBench's rmsnorm_matmul shape)."""

import numpy as np

INPUT_SPECS = {"x": ((4096, 1024), "float32"), "w": ((1024, 2048), "float32")}


def f_numpy(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    rms = np.sqrt(np.sum(np.square(x) / x.shape[1], axis=1, keepdims=True))
    return (x / rms) @ w
