"""Beta-1 kernels written here in the style of each public kernel family (fused
attention, causal attention with an online softmax, the chunked Mamba scan, LayerNorm
with VectorE statistics, a fused linear layer), run unchanged on the simulator and
checked against numpy at small shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernelopt.sim import run_kernel

BETA1 = Path(__file__).parent / "kernels" / "beta1"


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _mamba(delta, u, a, b, c):
    decay = np.exp(delta[:, None, :] * a[:, :, None])
    drive = delta[:, None, :] * b[None, :, :] * u[:, None, :]
    state = np.zeros(decay.shape[:2])
    out = np.zeros(delta.shape)
    for i in range(delta.shape[1]):
        state = decay[..., i] * state + drive[..., i]
        out[:, i] = (state * c[None, :, i]).sum(axis=1)
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    from math import erf, sqrt

    return 0.5 * x * (1 + np.vectorize(lambda v: erf(v / sqrt(2)))(x))


def _cases(rng: np.random.Generator) -> dict:
    q, k, v = (rng.uniform(-1, 1, (128, 1024)).astype(np.float32) for _ in range(3))
    qs, ks, vs = (rng.uniform(-1, 1, (384, 128)).astype(np.float32) for _ in range(3))
    causal = np.tril(np.ones((384, 384), bool))
    scores = np.where(causal, qs @ ks.T / np.sqrt(128), -np.inf)
    delta = rng.uniform(0, 0.5, (256, 1024)).astype(np.float32)  # decay < 1: a stable scan
    u = rng.uniform(-1, 1, (256, 1024)).astype(np.float32)
    a = rng.uniform(-1, -0.1, (256, 3)).astype(np.float32)
    b, c = (rng.uniform(-1, 1, (3, 1024)).astype(np.float32) for _ in range(2))
    x = rng.uniform(-1, 1, (200, 1200)).astype(np.float32)
    g, beta = (rng.uniform(-1, 1, (1200,)).astype(np.float32) for _ in range(2))
    xt = rng.uniform(-1, 1, (256, 256)).astype(np.float32)
    w = rng.uniform(-1, 1, (256, 512)).astype(np.float32)
    bias = rng.uniform(-1, 1, (512,)).astype(np.float32)
    mean, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    return {
        "attention_fused.py": (None, {"q": q, "k": k, "v": v}, _softmax(q.T @ k) @ v.T),
        "flash_causal.py": (None, {"q": qs, "k": ks, "v": vs}, _softmax(scores) @ vs),
        "mamba_chunked.py": (
            None,
            {"delta": delta, "u": u, "a": a, "b": b, "c": c},
            _mamba(delta, u, a, b, c),
        ),
        "layernorm_stats.py": (
            "layernorm",
            {"x": x, "gamma": g, "beta": beta},
            (x - mean) / np.sqrt(var + 1e-5) * g + beta,
        ),
        "fused_linear_gelu.py": (None, {"xT": xt, "w": w, "bias": bias}, _gelu(xt.T @ w + bias)),
    }


@pytest.mark.parametrize(
    "name",
    [
        "attention_fused.py",
        "flash_causal.py",
        "mamba_chunked.py",
        "layernorm_stats.py",
        "fused_linear_gelu.py",
    ],
)
def test_family_kernel_matches_numpy(name: str) -> None:
    func, inputs, expected = _cases(np.random.default_rng(7))[name]
    run = run_kernel(BETA1 / name, inputs, func=func)
    assert np.allclose(run.outputs, expected, atol=2e-3, rtol=2e-3)
