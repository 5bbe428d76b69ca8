"""x @ w + (x @ a) @ b with x [4096, 5120], w [5120, 12288], a [5120, 128], b [128, 12288],
fp32 (NKIBench's lora M4096 N12288 K5120 R128)."""

import numpy as np

INPUT_SPECS = {
    "x": ((4096, 5120), "float32"),
    "w": ((5120, 12288), "float32"),
    "a": ((5120, 128), "float32"),
    "b": ((128, 12288), "float32"),
}


def f_numpy(x: np.ndarray, w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return x @ w + (x @ a) @ b
