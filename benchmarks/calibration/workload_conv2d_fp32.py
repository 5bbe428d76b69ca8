"""workload_conv2d.py in fp32."""

import numpy as np

INPUT_SPECS = {
    "X": ((1, 128, 34, 34), "float32"),
    "W": ((128, 128, 3, 3), "float32"),
    "bias": ((128,), "float32"),
}


def f_numpy(X: np.ndarray, W: np.ndarray, bias: np.ndarray) -> np.ndarray:
    x, w = X.astype(np.float32), W.astype(np.float32)
    k = w.shape[2]
    oh, ow = x.shape[2] - k + 1, x.shape[3] - k + 1
    out = np.zeros((x.shape[0], w.shape[0], oh, ow), np.float32)
    for a in range(k):
        for b in range(k):
            out += np.einsum("nchw,oc->nohw", x[:, :, a : a + oh, b : b + ow], w[:, :, a, b])
    return out + bias.astype(np.float32)[None, :, None, None]
