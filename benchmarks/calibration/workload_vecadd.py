"""Element-wise sum of two fp32 vectors (CS149 asst4 part 1, Fall 2024); lengths per case."""

import numpy as np

INPUT_SPECS = {
    "a_vec": ((25600,), "float32"),
    "b_vec": ((25600,), "float32"),
}


def f_numpy(a_vec: np.ndarray, b_vec: np.ndarray) -> np.ndarray:
    return a_vec + b_vec
