"""Trainium2 numbers and Neuron tool conventions kernelopt relies on, in one place.

Sources: the public Neuron SDK documentation (see docs/trn2.md). Where a
value is a default, the program can override it (device.neuron.*).
"""

from __future__ import annotations

# TensorE: 128x128 PEs at 2.4 GHz, one MAC = 2 FLOPs -> 78.6e12, rounded as the docs do.
PEAK_BF16_FLOPS_PER_CORE = 79e12

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

# Artifact names inside one attempt's folder.
NEFF_NAME = "file.neff"
NTFF_NAME = "profile.ntff"
COMPILE_LOG_NAME = "log-neuron-cc.txt"
SUMMARY_NAME = "summary.json"
