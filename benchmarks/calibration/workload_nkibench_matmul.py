"""lhs [4096, 5120] @ rhs [5120, 12288], fp32 (NKIBench's matmul shape)."""

import numpy as np

INPUT_SPECS = {"lhs": ((4096, 5120), "float32"), "rhs": ((5120, 12288), "float32")}


def f_numpy(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhs @ rhs
