"""out = softmax(q @ k / sqrt(D)) @ v for one head, bf16, D = 128 (keys pre-transposed).

The shape of the public hand-written Trn2 attention figures (awslabs/nki-autotune
notes: nkilib ``attention_cte``, D = 128 bf16, 30 % / 46 % MFU at 2k / 16k
sequence length). MFU counts both matmuls over the full square: 4 * S^2 * D FLOPs.
"""

import numpy as np

S, D = 2048, 128
INPUT_SPECS = {"q": ((S, D), "bfloat16"), "k": ((D, S), "bfloat16"), "v": ((S, D), "bfloat16")}


def f_numpy(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    scores = q.astype(np.float32) @ k.astype(np.float32) / np.sqrt(q.shape[1])
    scores -= scores.max(axis=1, keepdims=True)
    p = np.exp(scores)
    return (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float32)
