"""Grouped-query attention with q [1, 4096, 16, 128], k and v [1, 4096, 8, 128], fp32, no
mask, output [1, 16, 4096, 128] (NKIBench's gqa_full B1 N4096 QH16 KH8 D128)."""

import numpy as np

INPUT_SPECS = {
    "q": ((1, 4096, 16, 128), "float32"),
    "k": ((1, 4096, 8, 128), "float32"),
    "v": ((1, 4096, 8, 128), "float32"),
}


def f_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    rep = q.shape[2] // k.shape[2]
    xq = q.transpose(0, 2, 1, 3)
    xk = np.repeat(k, rep, axis=2).transpose(0, 2, 1, 3)
    xv = np.repeat(v, rep, axis=2).transpose(0, 2, 1, 3)
    s = xq @ xk.transpose(0, 1, 3, 2) / np.float32(np.sqrt(q.shape[3]))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ xv
