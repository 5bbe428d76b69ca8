"""out = rmsnorm(lhs) @ rhs, 2048^3 bf16: the public Trn2 rmsnorm + matmul workload.

awslabs/nki-autotune kernel_library/rmsnorm_matmul_m2048_k2048_n2048.py: each row
of lhs divided by sqrt(mean(row^2) + 1e-6), then multiplied by rhs. MFU counts the
matmul only: 2 * M * K * N FLOPs.
"""

import numpy as np

M, K, N = 2048, 2048, 2048
EPS = 1e-6
INPUT_SPECS = {"lhs": ((M, K), "bfloat16"), "rhs": ((K, N), "bfloat16")}


def f_numpy(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    x = lhs.astype(np.float32)
    x = x / np.sqrt(np.mean(np.square(x), axis=1, keepdims=True) + EPS)
    return x @ rhs.astype(np.float32)
