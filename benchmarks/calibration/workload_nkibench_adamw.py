"""One AdamW update over [10944, 2048] fp32 (NKIBench's adamw shape and constants), in
the kernel's order of operations. The inputs are drawn from [-1, 1), so the second
moment can come out negative: its square root is NaN there in both (compared as equal)."""

import numpy as np

SHAPE = (10944, 2048)
INPUT_SPECS = {
    "theta": (SHAPE, "float32"),
    "g": (SHAPE, "float32"),
    "m": (SHAPE, "float32"),
    "v": (SHAPE, "float32"),
}


def f_numpy(theta: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray) -> np.ndarray:
    decayed = theta - 1e-5 * theta
    m_t = 0.9 * m + 0.1 * g
    v_t = 0.999 * v + (0.001 * g) * g
    with np.errstate(invalid="ignore"):
        step = (0.01 * m_t) * (1.0 / (np.sqrt(1000.0 * v_t) + 1e-8))
    return decayed - step
