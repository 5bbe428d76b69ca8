"""One AdamW update over [10944, 2048] fp32 (NKIBench's adamw shape and constants)."""

import numpy as np

SHAPE = (10944, 2048)
INPUT_SPECS = {
    "theta": (SHAPE, "float32"),
    "g": (SHAPE, "float32"),
    "m": (SHAPE, "float32"),
    "v": (SHAPE, "float32"),
}


def f_numpy(theta: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray) -> np.ndarray:
    m_t = 0.9 * m + 0.1 * g
    v_t = 0.999 * v + 0.001 * g * g
    return theta * (1 - 1e-5) - 0.01 * m_t / (np.sqrt(np.abs(v_t * 1000)) + 1e-8)
