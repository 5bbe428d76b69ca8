"""Fixtures for the KernelIR tests."""

from __future__ import annotations

import pytest
from ir_support import small_ir

from kernelopt.ir import KernelIR


@pytest.fixture
def matmul_ir() -> KernelIR:
    return small_ir("matmul")


@pytest.fixture
def lhs_rhs_ir() -> KernelIR:
    return small_ir("matmul_lhs_rhs")
