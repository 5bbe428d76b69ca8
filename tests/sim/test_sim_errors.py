"""Every rule a kernel can break is reported with the kernel's file and line."""

from __future__ import annotations

import numpy as np
import pytest

from kernelopt.sim import SimError, run_kernel

HEADER = """
import nki
import nki.isa as nisa
import nki.language as nl

"""

MATMUL_BODY = """
@nki.jit
def k(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray({a_shape}, dtype=nl.{a_dtype}, buffer=nl.{a_buf})
    bt = nl.ndarray({b_shape}, dtype=nl.bfloat16, buffer=nl.sbuf)
    acc = nl.ndarray({acc_shape}, dtype=nl.{acc_dtype}, buffer=nl.{acc_buf})
    nisa.memset(dst=bt, value=1.0)
    nisa.nc_matmul(dst=acc, stationary=at, moving=bt)  # <-
    return out
"""

GOOD = dict(
    a_shape=(128, 128),
    a_dtype="bfloat16",
    a_buf="sbuf",
    b_shape=(128, 512),
    acc_shape=(128, 512),
    acc_dtype="float32",
    acc_buf="psum",
)


def _raise(path, inputs=None, **kw) -> SimError:
    with pytest.raises(SimError) as err:
        run_kernel(path, inputs or {"a": np.zeros((1,), np.float32)}, **kw)
    return err.value


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(a_buf="psum", a_dtype="float32"), "stationary must be in SBUF, got PSUM"),
        (dict(acc_buf="sbuf"), "dst must be in PSUM, got SBUF"),
        (dict(acc_dtype="bfloat16"), "PSUM accumulation must be fp32"),
        (dict(a_shape=(128, 256)), "stationary free size M=256 > 128"),
        (dict(b_shape=(128, 1024), acc_shape=(128, 1024)), "moving free size N=1024 > 512"),
        (dict(a_shape=(64, 128)), "contraction mismatch: stationary K=64, moving K=128"),
        (dict(acc_shape=(128, 256)), "shape mismatch: dst (128, 256), expected (128, 512)"),
    ],
)
def test_matmul_rules(kernel_file, change, message):
    path, line = kernel_file(HEADER + MATMUL_BODY.format(**{**GOOD, **change}))
    err = _raise(path, {"a": np.zeros((1,), np.float32), "b": np.zeros((1,), np.float32)})
    assert err.kind == "isa"
    assert (err.file, err.line) == (str(path), line)
    assert message in err.message
    assert str(err).startswith(f"{path}:{line}: ")


def test_the_valid_matmul_template_runs_until_its_uninitialised_read(kernel_file):
    # The template's stationary tile is never written: the only complaint left.
    path, line = kernel_file(HEADER + MATMUL_BODY.format(**GOOD))
    err = _raise(path, {"a": np.zeros((1,), np.float32), "b": np.zeros((1,), np.float32)})
    assert (err.kind, err.line) == ("numerics", line)
    assert "nc_matmul reads uninitialised memory: sbuf tensor" in err.message


@pytest.mark.parametrize(
    "body, kind, message",
    [
        (
            "t = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)  # <-",
            "isa",
            "partition dimension 256 > 128",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.dma_copy(dst=t, src=a[0:128, 2:6])  # <-",
            "isa",
            "out-of-bounds slice [2:6] on axis 1 of 'a' (axis size 4",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.dma_copy(dst=t, src=a[128])  # <-",
            "isa",
            "out-of-bounds index 128 on axis 0",
        ),
        (
            "t = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.dma_copy(dst=t, src=a)  # <-",
            "isa",
            "dma_copy: shape mismatch: dst (128, 2) vs src (128, 4)",
        ),
        (
            "t = nl.ndarray((4, 128), dtype=nl.bfloat16, buffer=nl.sbuf)\n"
            "    nisa.dma_transpose(dst=t, src=a)  # <-",
            "isa",
            "dma_transpose: dtypes must match: dst bfloat16 vs src float32",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    u = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.tensor_tensor(dst=t, data1=t, data2=u, op=nl.add)  # <-",
            "isa",
            "tensor_tensor: shape mismatch: dst (128, 4) vs data2 (128, 2)",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.memset(dst=t, value=0.0)\n"
            "    u = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.tensor_reduce(dst=u, op=nl.add, data=t, axis=0)  # <-",
            "isa",
            "cannot reduce the partition axis",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.tensor_copy(dst=t, src=a)  # <-",
            "isa",
            "tensor_copy: src must be in SBUF or PSUM, got HBM tensor 'a'",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.activation(dst=t, op=nl.add, data=t)  # <-",
            "isa",
            "activation: op must be an activation",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.tensor_copy(dst=u, src=t[:, 0:4])  # <-",
            "numerics",
            "tensor_copy reads uninitialised memory: sbuf tensor 'sbuf@",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.psum, name='acc')\n"
            "    nisa.memset(dst=t[:, 0:2], value=0.0)\n"
            "    u = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
            "    nisa.tensor_copy(dst=u, src=t)  # <-",
            "numerics",
            "psum tensor 'acc' (128, 4) allocated at line 7, region [0:128, 0:4]",
        ),
        (
            "t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n    t[0:2] = 1.0  # <-",
            "isa",
            "not by item assignment",
        ),
        ("x = undefined_name + 1  # <-", "exception", "NameError: name 'undefined_name'"),
    ],
)
def test_rule_violations_name_file_line_and_limit(kernel_file, body, kind, message):
    source = HEADER + f"@nki.jit\ndef k(a):\n    {body}\n    return a\n"
    path, line = kernel_file(source)
    err = _raise(path, {"a": np.zeros((128, 4), np.float32)})
    assert err.kind == kind
    assert (err.file, err.line) == (str(path), line)
    assert message in err.message


def test_errors_inside_helper_functions_point_at_the_helper_line(kernel_file):
    path, line = kernel_file(
        HEADER
        + """
def load(src):
    t = nl.ndarray((128, 8), dtype=src.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)  # <-
    return t

@nki.jit
def k(a):
    load(a)
    return a
"""
    )
    err = _raise(path, {"a": np.zeros((128, 4), np.float32)})
    assert (err.kind, err.line) == ("isa", line)


def test_output_never_written_is_a_numerics_failure(kernel_file):
    path, _ = kernel_file(
        HEADER
        + """
@nki.jit
def k(a):
    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out[0:64, :], src=t[0:64, :])
    return out
"""
    )
    err = _raise(path, {"a": np.zeros((128, 4), np.float32)})
    assert err.kind == "numerics"
    assert "output 'out' (128, 4): 256 of 512 elements were never written" in err.message


def test_func_choice_lists_the_candidates(kernel_file):
    path, _ = kernel_file(
        HEADER + "@nki.jit\ndef one(a):\n    return a\n\n@nki.jit\ndef two(a):\n    return a\n"
    )
    err = _raise(path, {"a": np.zeros((4,), np.float32)})
    assert "expected exactly one @nki.jit function, found one, two" in err.message
    err = _raise(path, {"a": np.zeros((4,), np.float32)}, func="three")
    assert "no function 'three'" in err.message and "one, two" in err.message
    run = run_kernel(path, {"a": np.ones((4,), np.float32)}, func="two")
    assert run.func == "two"
    np.testing.assert_array_equal(run.outputs, np.ones(4))


def test_inputs_must_match_the_kernel_parameters(kernel_file):
    path, _ = kernel_file(HEADER + "@nki.jit\ndef k(a, b):\n    return a\n")
    err = _raise(path, {"a": np.zeros((4,), np.float32), "c": np.zeros((4,), np.float32)})
    assert err.kind == "exception"
    assert "missing ['b'], unexpected ['c']" in err.message


def test_syntax_error_names_its_line(kernel_file):
    path, line = kernel_file(HEADER + "@nki.jit\ndef k(a):\n    return a +  # <-\n")
    err = _raise(path, {"a": np.zeros((4,), np.float32)})
    assert (err.kind, err.line) == ("exception", line)


def test_a_kernel_calling_sys_exit_is_an_exception_not_an_exit(kernel_file):
    path, line = kernel_file(HEADER + "import sys\n\n@nki.jit\ndef k(a):\n    sys.exit(3)  # <-\n")
    err = _raise(path, {"a": np.zeros((4,), np.float32)})
    assert (err.kind, err.line) == ("exception", line)
    assert "SystemExit: 3" in err.message


def test_a_missing_kernel_file_is_reported(tmp_path):
    err = _raise(tmp_path / "absent.py", {})
    assert err.kind == "exception" and "cannot read kernel" in err.message
