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
- [trn2-arch] "Trainium2 Architecture Guide for NKI" (aws-neuron-sdk
  nki/guides/architecture/trainium2_arch.rst @4373fac): TensorE transpose mode
  "Starting with NeuronCore-v3", with a 2x speedup in FP32 transpose.
- [tutorial] NKI matrix multiplication tutorial (aws-neuron/aws-neuron-sdk
  nki/tutorials/matrix_multiplication.rst @7c165a3): [4096, 8192] @ [8192, 8192],
  BF16, trn1.32xlarge, fully optimised kernel 6.97 ms, HFU 85.24 %.
- [profiles] zhang677/AccelOpt @2dbeab4
  ``experiments/full_complete_local/profile_results.csv``: latency and per-engine
  active time of NKIBench's baseline kernels on trn1.32xlarge; the arithmetic
  next to each value reads them against that kernel's instruction counts.
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
    # [trn2-arch] TensorE's transpose mode is new in NeuronCore-v3: on v2 a
    # transpose is a matmul against an identity, at the full fp32 cost.
    fp32_transpose_factor=4.0,
    # [trn2-arch] VectorE's performance mode is new in NeuronCore-v3.
    vector_performance_mode=False,
    # [trn2-arch] "Data Movement Updates": on NeuronCore-v2 VectorE and GpSimd may not
    # access SBUF in parallel, nor VectorE and ScalarE PSUM.
    vector_gpsimd_share_sbuf=True,
    vector_scalar_share_psum=True,
    # [tutorial] TensorE sustains 512 columns per ~596 cycles: the fully optimised
    # bf16 kernel, 32,768 matmuls of 128 x 128 x 512, takes 6.97 ms = 595.6 cycles
    # each at 2.8 GHz (an upper bound: it assumes TensorE busy the whole run; the
    # tutorial reports HFU 85.2 %). fp32's four passes follow: NKIBench
    # transpose_matmul (fp32, only matmuls) measures ~615 cycles per pass.
    tensor_columns_per_cycle=512 / 596,
    # [arch] 820 GB/s per device, 2 cores: 410 GB/s per core over 16 DMA
    # engines (32 per device).
    hbm_bytes_per_ns=410.0,
    dma_queues=16,
    dma_bytes_per_ns=410.0 / 16,
    # [nc3]: software descriptor generation only, so every DMA pays the
    # 1.3 us fixed cost.
    dma_hwdge_fixed_ns=DEFAULT_PARAMS.dma_fixed_ns,
    # [profiles] The compiler runs a tensor_scalar left to it on ScalarE when ScalarE
    # implements its operators: adamw's eight ScalarE instructions per 512-element
    # half (seven multiply/add tensor_scalars and a sqrt) take 344 x 8 x (512 + 100)
    # cycles at 1.4 GHz = 1.20 ms, its measured ScalarE time 1.23 ms (61.6 % of
    # 2.000 ms); silu's two (exp and 1 + e): 0.39 ms against 0.42 ms (31.5 %).
    tensor_scalar_on_scalar_engine=True,
    # [profiles] nki.isa.reciprocal on VectorE: the docs' 8N cycles would keep silu's
    # VectorE busy 2.1 ms, longer than the whole measured 1.333 ms. What the profiles
    # leave for it once their other VectorE work (an fp32 multiply, 2N, per 512
    # elements; swiglu also one with a PSUM operand, N) is subtracted: silu 2.42,
    # swiglu 2.89 cycles per element (VectorE 73.9 % of 1.333 ms over 448 halves;
    # 13.5 % of 4.222 ms over 192). Their mean; each predicts the other within 10 %.
    reciprocal_cycles_per_element=2.65,
)

CHIPS: dict[str, Trn2Params] = {"trn2": DEFAULT_PARAMS, "trn1": TRN1_PARAMS}


def chip_params(name: str) -> Trn2Params:
    """The parameter set of chip ``name`` (trn1 or trn2); ValueError names the choices."""
    try:
        return CHIPS[name]
    except KeyError:
        raise ValueError(f"unknown chip {name!r}; expected one of {', '.join(CHIPS)}") from None
