"""The NKI optimisation tutorial's matmul: [4096, 8192] @ [8192, 8192], fp32 inputs."""

import numpy as np

K, M, N = 8192, 4096, 8192
INPUT_SPECS = {"lhsT": ((K, M), "float32"), "rhs": ((K, N), "float32")}


def f_numpy(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhsT.T @ rhs
