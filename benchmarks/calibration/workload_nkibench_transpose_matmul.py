"""lhs.T @ rhs with lhs [K=2048, M=4096], rhs [2048, N=10944], fp32 (NKIBench's
transpose_matmul M4096 K2048 N10944)."""

import numpy as np

INPUT_SPECS = {"lhs": ((2048, 4096), "float32"), "rhs": ((2048, 10944), "float32")}


def f_numpy(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhs.T @ rhs
