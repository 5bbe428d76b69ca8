"""Trainium2 numbers and Neuron tool conventions kernelopt relies on, in one place.

Sources: the public Neuron SDK documentation (see docs/trn2.md). Where a
value is a default, the program can override it (device.neuron.*).
"""

from __future__ import annotations

# TensorE: 128x128 PEs at 2.4 GHz, one MAC = 2 FLOPs: 2 * 128 * 128 * 2.4e9 ~ 78.64e12 per
# physical NeuronCore. Not the rounded 79e12 of the marketing figures: a published 89.47 %
# MFU at 0.2442 ms for a 2048^3 bf16 matmul only fits 78.64e12. An LNC=2 logical core is
# two physical cores, so the peak a measurement is judged against is this times the LNC.
PEAK_BF16_FLOPS_PER_CORE = 78.64e12


def peak_flops(lnc: int) -> float:
    """The dense bf16 peak of one logical NeuronCore of ``lnc`` physical cores."""
    return PEAK_BF16_FLOPS_PER_CORE * lnc


DEFAULT_WARMUP = 10
DEFAULT_ITERATIONS = 100
DEFAULT_COMPILE_TIMEOUT_S = 600.0

# neuronx-cc names the Trainium2 target "trn2"; the NKI standalone path reads
# the same value from this variable when no device is attached (compile workers).
PLATFORM_ENV = "NEURON_PLATFORM_TARGET_OVERRIDE"
PLATFORM = "trn2"
VISIBLE_CORES_ENV = "NEURON_RT_VISIBLE_CORES"
# The runtime's logical-core setting must match the LNC the NEFF was compiled for.
LNC_ENV = "NEURON_LOGICAL_NC_CONFIG"

NEURON_BIN = "/opt/aws/neuron/bin"
# The runtime's libraries, which the nrtpy environment needs on LD_LIBRARY_PATH.
NRTPY_LIBRARY = "/opt/aws/neuron/lib"

# The profiler CLI: neuron-explorer from SDK 2.27, neuron-profile before (unsupported
# from 2.30); same capture / view commands. Probed in this order.
PROFILERS = ("neuron-explorer", "neuron-profile")
# Trace the second execution, past one-time warm-up effects (Profile a NKI Kernel guide).
PROFILE_NTH_EXEC = 2

# The device-side numerics check: atol = rtol, and the seed of its inputs.
DEFAULT_DEVICE_TOLERANCE = 1e-2
DEVICE_CHECK_SEED = 0

# Artifact names inside one attempt's folder.
NEFF_NAME = "file.neff"
NTFF_NAME = "profile.ntff"
COMPILE_LOG_NAME = "log-neuron-cc.txt"
SUMMARY_NAME = "summary.json"
# The NEFF's input and output tensors (name, shape, dtype) as its compiler described them.
TENSORS_NAME = "tensors.json"
# The compile API's own artifacts folder inside out/ (neuronx-cc wants it empty).
ARTIFACTS_DIR = "nki-artifacts"
# The seeded inputs a profiler capture is fed, one raw-bytes file NAME.bin each (no .npy
# header: the public runner writes them with ndarray.tofile), inside out/.
INPUTS_DIR = "inputs"
# The working folder of the capture that saves the NEFF's outputs (--save-output writes
# them there, named in its log as: saved output "NAME" as "FILE"), inside out/.
OUTPUTS_DIR = "outputs"
# Without a device-side benchmark (SDK 2.22-2.31), the device time is the minimum of
# total_time over this many captures (at most device.neuron.iterations).
CAPTURE_RUNS = 5
