"""Rotary embedding of x [128, 64 x 4096] with cos, sin [64, 64 x 4096], fp32 (NKIBench's
rope_single_freq_apply B1 H64 N4096 D128 layout: heads and positions along the free axis)."""

import numpy as np

INPUT_SPECS = {
    "x": ((128, 262144), "float32"),
    "cos": ((64, 262144), "float32"),
    "sin": ((64, 262144), "float32"),
}


def f_numpy(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    first, second = x[:64], x[64:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=0)
