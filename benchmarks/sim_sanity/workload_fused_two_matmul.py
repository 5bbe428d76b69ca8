"""out = (lhsT.T @ rhs) @ w, bf16 (shapes set by the sanity script)."""

import numpy as np

INPUT_SPECS = {
    "lhsT": ((256, 256), "bfloat16"),
    "rhs": ((256, 256), "bfloat16"),
    "w": ((256, 512), "bfloat16"),
}


def f_numpy(lhsT: np.ndarray, rhs: np.ndarray, w: np.ndarray, fused: bool = True) -> np.ndarray:
    return (lhsT.T @ rhs) @ w
