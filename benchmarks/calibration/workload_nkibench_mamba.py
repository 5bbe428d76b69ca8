"""Mamba scan with delta, u [C=256, M=7168], A [256, S=16], B, C [16, 7168], fp32 (NKIBench's
mamba M7168 C256 S16 shapes)."""

import numpy as np

INPUT_SPECS = {
    "delta": ((256, 7168), "float32"),
    "u": ((256, 7168), "float32"),
    "a": ((256, 16), "float32"),
    "b": ((16, 7168), "float32"),
    "c": ((16, 7168), "float32"),
}


def f_numpy(delta, u, a, b, c):
    decay = np.exp(delta[:, None, :] * a[:, :, None]).astype(np.float64)  # [C, S, M]
    drive = delta[:, None, :] * b[None, :, :] * u[:, None, :]
    state = np.zeros(decay.shape[:2])
    out = np.zeros(delta.shape)
    for i in range(delta.shape[1]):
        state = decay[..., i] * state + drive[..., i]
        out[:, i] = (state * c[None, :, i]).sum(axis=1)
    return out.astype(np.float32)
