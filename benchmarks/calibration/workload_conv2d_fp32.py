"""workload_conv2d.py in fp32 (the same convolution; only the inputs' dtype differs)."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "workload_conv2d_fp16", Path(__file__).with_name("workload_conv2d.py")
)
_fp16 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fp16)

f_numpy = _fp16.f_numpy
INPUT_SPECS = {name: (shape, "float32") for name, (shape, _) in _fp16.INPUT_SPECS.items()}
