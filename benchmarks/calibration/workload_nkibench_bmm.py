"""lhs [16, 4096, 64] @ rhs [16, 64, 4096] per batch, fp32 (NKIBench's bmm shape)."""

import numpy as np

INPUT_SPECS = {"lhs": ((16, 4096, 64), "float32"), "rhs": ((16, 64, 4096), "float32")}


def f_numpy(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhs @ rhs
