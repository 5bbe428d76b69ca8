"""softmax(lhs[b] @ rhs[b], axis=-1) with lhs [16, 4096, 64], rhs [16, 64, 4096], fp32
(NKIBench's bmm_softmax B16 K64 M4096 N4096)."""

import numpy as np

INPUT_SPECS = {"lhs": ((16, 4096, 64), "float32"), "rhs": ((16, 64, 4096), "float32")}


def f_numpy(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    x = lhs @ rhs
    e = np.exp(x - x.max(axis=2, keepdims=True))
    return e / e.sum(axis=2, keepdims=True)
