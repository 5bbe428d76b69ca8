"""The chips the simulator models, each one parameter set (``Trn2Params`` fields).

``trn2`` (NeuronCore-v3) is ``DEFAULT_PARAMS``, sourced field by field in
``kernelopt/sim/trn2.py``. ``trn1`` (NeuronCore-v2) changes only what the
public record says differs; each number names its source:

- [arch] "Trainium/Inferentia2 Architecture Guide for NKI"
  (aws-neuron/aws-neuron-sdk nki/guides/architecture/trainium_inferentia2_arch.rst
  @4373fac): a Trainium device has 2 NeuronCore-v2, 2 HBM stacks at
  820 GB/s, 32 DMA engines; per core SBUF 24 MiB (128 partitions x
  192 KiB) and PSUM 2 MiB (128 x 16 KiB); engine frequencies TensorE
  2.8 GHz, VectorE 1.12 GHz, ScalarE 1.4 GHz, GpSimd 1.4 GHz, 128 elements
  per cycle in and out; TensorE 92 TFLOPS bf16/fp16/tf32, 23 TFLOPS fp32,
  MM_INIT_LATENCY 64 cycles; VectorE N cycles for one input, 2N for two,
  ~100 cycles static overhead.
- [v2] "NeuronCore-v2 Architecture" (awsdocs-neuron,
  general/arch/neuron-hardware/neuron-core-v2): ScalarE 2.9 TFLOPS and
  VectorE 2.3 TFLOPS of FP32 (FLOP counts, not element rates: not used).
- [accelopt] zhang677/AccelOpt ``calculate_percentage_of_peak.py``: trn1
  23.75 TFLOP/s fp32 matmul per core, 410 GiB/s HBM (SIM-CALIBRATION.md).
  ([accelopt]'s 23.75e12 is a quarter of 95e12, the Trn1 instance page's
  190 TFLOPS per two-core chip; [arch]'s 2 x 128 x 128 x 2.8 GHz = 91.75e12
  is what the public NKIBench profiles imply: hfu 35.99 % of 1159.6 GFLOP
  in 35.20 ms. The model follows [arch].)
- [nc3] hardware descriptor generation (0.6 us DMAs) and the TensorE
  warm-up throttle are NeuronCore-v3 features (NEURON.md); v2 has neither.
"""

from __future__ import annotations

from dataclasses import replace

from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params

_TRN1_TENSOR_CLOCK = 2.8e9  # [arch]

TRN1_PARAMS: Trn2Params = replace(
    DEFAULT_PARAMS,
    name="trn1",
    sbuf_partition_bytes=192 * 1024,  # [arch] 24 MiB / 128 partitions
    psum_partition_bytes=16 * 1024,  # [arch] 2 MiB / 128 partitions
    tensor_clock_hz=_TRN1_TENSOR_CLOCK,
    peak_bf16_flops=2 * 128 * 128 * _TRN1_TENSOR_CLOCK,  # [arch] "92 TFLOPS"
    fp32_peak_divisor=4.0,  # [arch] fp32 matmuls cost ~4x: "23 TFLOPS"
    core_clock_hz=_TRN1_TENSOR_CLOCK,
    vector_clock_hz=1.12e9,  # [arch]
    scalar_clock_hz=1.4e9,  # [arch]
    gpsimd_clock_hz=1.4e9,  # [arch]
    # [nc3]: no TensorE warm-up throttle on v2.
    tensor_throttle_factor=1.0,
    # [arch] 820 GB/s per device, 2 cores: 410 GB/s per core over 16 DMA
    # engines (32 per device).
    hbm_bytes_per_ns=410.0,
    dma_queues=16,
    dma_bytes_per_ns=410.0 / 16,
    # [nc3]: software descriptor generation only, so every DMA pays the
    # 1.3 us fixed cost.
    dma_hwdge_fixed_ns=DEFAULT_PARAMS.dma_fixed_ns,
)

CHIPS: dict[str, Trn2Params] = {"trn2": DEFAULT_PARAMS, "trn1": TRN1_PARAMS}


def chip_params(name: str) -> Trn2Params:
    """The parameter set of chip ``name`` (trn1 or trn2); ValueError names the choices."""
    try:
        return CHIPS[name]
    except KeyError:
        raise ValueError(f"unknown chip {name!r}; expected one of {', '.join(CHIPS)}") from None
