"""Fake ``nki.framework.kernel``: the kernel object the pre-June-2026 driver takes (awslabs/nki-autotune before e7676de; unverified beyond that runner)."""

from __future__ import annotations

from typing import Any

from kernelopt.testing.fake_trn2 import trace


class Kernel:
    """Wraps an ``@nki.jit`` kernel (or its plain function) for ``compile_to_bir``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.func = trace.kernel_function(kernel)
