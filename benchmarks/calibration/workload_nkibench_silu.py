"""silu over [4096, 7168] fp32 (NKIBench's silu shape)."""

import numpy as np

INPUT_SPECS = {"x": ((4096, 7168), "float32")}


def f_numpy(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))
