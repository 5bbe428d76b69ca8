"""out = lhsT.T @ rhs (or lhs @ rhs with transposed_lhs=False), bf16; shapes set per case."""

import numpy as np

INPUT_SPECS = {"lhs": ((1024, 1024), "bfloat16"), "rhs": ((1024, 1024), "bfloat16")}
KERNEL_KWARGS = {"loop_order": "MNK", "k_blocks": 2, "m_blocks": 2, "n_blocks": 1}


def f_numpy(lhs: np.ndarray, rhs: np.ndarray, transposed_lhs: bool = True) -> np.ndarray:
    return (lhs.T if transposed_lhs else lhs) @ rhs
