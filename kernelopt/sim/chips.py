"""The chips the simulator models, each one parameter set (``Trn2Params`` fields).

``trn2`` (NeuronCore-v3) is ``DEFAULT_PARAMS``, sourced field by field in
``kernelopt/sim/trn2.py``. ``trn1`` (NeuronCore-v2) changes only what the
public record says differs; each number names its source:

- [arch] "Trainium/Inferentia2 Architecture Guide for NKI"
  (awsdocs-neuron, nki/arch/trainium_inferentia2_arch): a Trainium device
  has 2 NeuronCore-v2, 2 HBM stacks at 820 GB/s, 32 DMA engines; SBUF
  24 MiB (128 partitions x 192 KiB) and PSUM 2 MiB (128 x 16 KiB) per core.
- [v2] "NeuronCore-v2 Architecture" (awsdocs-neuron,
  general/arch/neuron-hardware/neuron-core-v2): ScalarE 2.9 TFLOPS and
  VectorE 2.3 TFLOPS of FP32.
- [accelopt] zhang677/AccelOpt ``calculate_percentage_of_peak.py``: trn1
  23.75 TFLOP/s fp32 matmul per core, 410 GiB/s HBM (SIM-CALIBRATION.md).
- [trn1] the Trn1 instance page: 190 TFLOPS BF16/FP16 per Trainium chip
  (3,040 over 16 chips), i.e. 95e12 per core, four times [accelopt]'s fp32.
- [nc3] hardware descriptor generation (0.6 us DMAs) and the TensorE
  warm-up throttle are NeuronCore-v3 features (NEURON.md); v2 has neither.

Clocks of VectorE, ScalarE and GpSimd on v2 are not in the record we have:
they keep the Trn2 values and are marked unverified.
"""

from __future__ import annotations

from dataclasses import replace

from kernelopt.sim.trn2 import DEFAULT_PARAMS, Trn2Params

# 95e12 FLOP/s per core [trn1] over 128 x 128 PEs: the effective TensorE
# clock at one moving column per cycle (estimate derived from [trn1]).
_TRN1_PEAK_BF16 = 95e12
_TRN1_TENSOR_CLOCK = _TRN1_PEAK_BF16 / (2 * 128 * 128)

TRN1_PARAMS: Trn2Params = replace(
    DEFAULT_PARAMS,
    name="trn1",
    sbuf_partition_bytes=192 * 1024,  # [arch] 24 MiB / 128 partitions
    psum_partition_bytes=16 * 1024,  # [arch] 2 MiB / 128 partitions
    tensor_clock_hz=_TRN1_TENSOR_CLOCK,
    peak_bf16_flops=_TRN1_PEAK_BF16,  # [trn1]
    fp32_peak_divisor=4.0,  # [accelopt] 23.75e12 = 95e12 / 4
    core_clock_hz=_TRN1_TENSOR_CLOCK,
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
    # unverified: VectorE/ScalarE/GpSimd clocks kept at the Trn2 values.
)

CHIPS: dict[str, Trn2Params] = {"trn2": DEFAULT_PARAMS, "trn1": TRN1_PARAMS}


def chip_params(name: str) -> Trn2Params:
    """The parameter set of chip ``name`` (trn1 or trn2); ValueError names the choices."""
    try:
        return CHIPS[name]
    except KeyError:
        raise ValueError(f"unknown chip {name!r}; expected one of {', '.join(CHIPS)}") from None
