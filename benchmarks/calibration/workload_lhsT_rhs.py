"""out = lhsT.T @ rhs, 2048^3 bf16: the shape of the public Trn2 MFU ladder."""

import numpy as np

K, M, N = 2048, 2048, 2048
INPUT_SPECS = {"lhsT": ((K, M), "bfloat16"), "rhs": ((K, N), "bfloat16")}


def f_numpy(lhsT: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return lhsT.T @ rhs
