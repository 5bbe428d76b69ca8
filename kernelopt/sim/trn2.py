"""Every Trainium2 number the simulator uses, named once, with where it comes from.

Sources: the public NKI architecture and performance guides and the Trn2
product pages, as summarised in the project's NEURON.md ("Trainium2 numbers"
and "Facts for the cost model"). Values the guides only document for
NeuronCore-v2 are marked (v2); values that are our own estimate are marked
(estimate) and were tuned against the public calibration points listed in
docs/sim.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Trn2Params:
    name: str = "trn2"  # the chip these numbers describe
    # --- on-chip memory (per NeuronCore) ---
    partitions: int = 128  # SBUF/PSUM partition count; also the matmul K limit
    # SBUF bytes per partition: 192 KiB per the v2 docs; the Trn2 guide says 224 KiB.
    sbuf_partition_bytes: int = 192 * 1024
    psum_partition_bytes: int = 16 * 1024  # 8 banks x 2 KiB
    psum_bank_bytes: int = 2 * 1024  # one bank holds 512 fp32 per partition

    # --- TensorE ---
    tensor_clock_hz: float = 2.4e9
    stationary_fmax: int = 128  # stationary free size (M) limit
    moving_fmax: int = 512  # moving free size (N) limit
    # A matmul costs max(min(64, M), N) cycles at 16-bit ...
    matmul_min_stationary_cycles: int = 64
    # ... and four times that with 4-byte operands.
    fp32_matmul_factor: float = 4.0
    # A TensorE transpose (nc_transpose on TensorE, nc_matmul(is_transpose=True))
    # of 4-byte data runs in NeuronCore-v3's transpose mode: "2x speedup in FP32
    # transpose, vs. no transpose mode" (Trainium2 architecture guide for NKI,
    # aws-neuron-sdk nki/guides/architecture/trainium2_arch.rst @4373fac), so
    # half the fp32 matmul factor. v2 has no transpose mode (chips.py).
    fp32_transpose_factor: float = 2.0
    # Issue interval floor between TensorE instructions (v2).
    tensor_issue_floor_cycles: int = 64
    # Columns of the moving tensor TensorE streams per cycle, sustained over
    # back-to-back matmuls. One on NeuronCore-v3: the Trn2 scoreboard's 5120^3
    # lhsT GEMM (16,000 bf16 matmuls of 512 columns, 3.504 ms host-timed against
    # 3.413 ms of columns at 2.4 GHz) leaves under ~14 cycles (3 %) per matmul
    # before the host cost is taken off. Trn1's value is in chips.py.
    tensor_columns_per_cycle: float = 1.0
    # TensorE starts throttled (~50 %) and ramps to full rate over the first
    # ~3 us of a busy period; it re-throttles after ~3 us of low use. Modelled
    # as a rate rising linearly from 1/factor to 1 over the warm-up window, read
    # at each instruction's start.
    tensor_warmup_ns: float = 3000.0
    tensor_throttle_factor: float = 2.0
    tensor_rethrottle_idle_ns: float = 3000.0

    # --- VectorE / ScalarE / GpSimd ---
    vector_transpose_max: int = 32  # VectorE nc_transpose handles up to 32 x 32
    vector_clock_hz: float = 0.96e9
    scalar_clock_hz: float = 1.2e9
    gpsimd_clock_hz: float = 1.2e9
    # max(64, N) cycles for one input of free size N (v2 rule of thumb).
    engine_min_cycles: int = 64
    # ~100 cycles static overhead per instruction (v2).
    engine_static_cycles: int = 100
    # Reading a PSUM operand takes VectorE two cycles per element, half its
    # SBUF rate (NEURON.md: half rate "with a PSUM operand"). The public
    # rung-2 profile agrees: VectorE 18.2 % of ~366 us over 64 drains is
    # ~1.04 us per 512-element fp32 PSUM -> SBUF copy, 2 x 512 cycles at 0.96 GHz.
    psum_read_cycles_per_element: float = 2.0
    # ScalarE streams a PSUM operand at its full rate, one element per cycle:
    # the public Trn1 NKIBench bmm profile (16 x 4096 x 4096 fp32 outputs, each
    # copied out of PSUM by ScalarE in 512-element instructions) shows ScalarE
    # 37.3 % of 4.611 ms active, ~1.2 cycles per element with the ~100-cycle
    # instruction overhead; at two cycles it would be busier than the whole run
    # allows. The Trn2 guide: VectorE and ScalarE access PSUM "at full
    # bandwidth in parallel" (banks permitting).
    scalar_psum_read_cycles_per_element: float = 1.0
    # GpSimd processes fewer elements per cycle than VectorE (estimate); not
    # applied to memset, whose cost is documented per engine cycle.
    gpsimd_slowdown: float = 2.0
    # Where the compiler runs a tensor_scalar left to it (engine unknown) whose
    # operators ScalarE implements (multiply, add, or multiply then add: the
    # nki.isa.tensor_scalar docs' ScalarE subset). No public Trn2 profile says;
    # VectorE, as the NKI docs' cost tables assume.
    tensor_scalar_on_scalar_engine: bool = False
    # VectorE performance mode (NeuronCore-v3; the Trainium2 Architecture Guide for
    # NKI, aws-neuron/aws-neuron-sdk nki/guides/architecture/trainium2_arch.rst
    # @4373fac, "Vector Engine Performance Mode", applied by the hardware itself):
    # tensor_copy and tensor_scalar stream 4x faster than on NeuronCore-v2 when data
    # and destination are BF16/FP16 in SBUF with a contiguous innermost axis, and 2x
    # when that axis is strided (``sim.cost.vector_speedup``; its 2x with a PSUM
    # operand is not applied, see there). The guide's 2x for tensor_tensor on two
    # BF16 SBUF inputs is the one-pass case of tensor_tensor.
    vector_performance_mode: bool = True
    # NeuronCore-v3 lifted two restrictions of v2 (the Trainium2 Architecture Guide for
    # NKI, aws-neuron-sdk nki/about/trainium2_arch.rst @04832dc, "Data Movement
    # Updates"): VectorE and GpSimd may access SBUF in parallel, and VectorE and
    # ScalarE PSUM, both "disallowed in NeuronCore-v2". True here: one of the pair
    # waits while the other uses that memory.
    vector_gpsimd_share_sbuf: bool = False
    vector_scalar_share_psum: bool = False
    # VectorE cycles per element of nki.isa.reciprocal (the SDK 2.2x docs: 8N).
    reciprocal_cycles_per_element: float = 8.0

    # --- DMA ---
    dma_queues: int = 16  # 16 DMA engines per core
    # Per engine; a transfer is spread over the engines, so the core's DMA
    # bandwidth is 16 x 23 ~ 368 GB/s, shared by all transfers in flight.
    dma_bytes_per_ns: float = 23.0
    # Fixed cost per transfer (descriptor set-up, semaphore latency). It is a
    # latency: other transfers move data meanwhile. ~1.3 us with software
    # descriptor generation; Trn2 (NeuronCore-v3) generates descriptors in
    # hardware (HWDGE), ~0.6 us, and the compiler picks it unless the kernel
    # asks for dge_mode=swdge or none.
    dma_fixed_ns: float = 1300.0
    dma_hwdge_fixed_ns: float = 600.0
    # dge_mode=none: descriptors pre-computed on the host, read from HBM; the DGE
    # deep dive (aws-neuron-sdk @f252115 nki/deep-dives/nki-dge.rst) ranks it the
    # lowest per-transfer latency and gives no figure, so it is held at the
    # hardware-DGE figure, its upper bound; nothing is generated on device, so it
    # takes no turn of the serial descriptor issue below.
    dma_precomputed_fixed_ns: float = 600.0
    # The part of that cost that is serial across transfers (descriptor
    # generation); small enough that the tutorial's 65,536-transfer tiled
    # kernel stays bandwidth-bound (estimate).
    dma_issue_ns: float = 200.0
    # Efficiency by bytes per partition row: row / (row + overhead). 400 gives
    # 2 KiB -> 84 %, 4 KiB -> 91 %, 512 B -> 56 %, 256 B -> 39 % (guide: < 256 B
    # severely overhead-bound, 2 KiB ~ 80 %, >= 4 KiB ~ saturating). 400 rather
    # than the 512 that gives exactly 80 % (estimate): with 512 the tutorial's
    # DMA-bound hoisted kernel reads 7 pp slow (docs/sim.md, Calibration).
    dma_row_overhead_bytes: float = 400.0
    dma_transpose_hbm_efficiency: float = 0.9  # HBM -> SBUF, up to 90 % of copy
    dma_transpose_sbuf_efficiency: float = 0.5  # SBUF -> SBUF, up to 50 %
    # dma_transpose moves fixed blocks of 16 source rows x 128 columns (4 KiB
    # at 2 bytes): the hardware-DGE transpose takes src.shape[0] == 16 and
    # src.shape[-1] % 128 == 0 (nki.isa.dma_transpose docs). Its efficiency
    # follows the block, not the strided source row (hypothesis, tested by
    # the calibration suite's lhs @ rhs kernels).
    dma_transpose_block_rows: int = 16
    dma_transpose_block_columns: int = 128
    hbm_bytes_per_ns: float = 368.0  # HBM per core: 2.9 TB/s / 8 cores

    # --- synchronisation and buffering ---
    # Semaphore hand-off between two engines (estimate).
    sync_latency_ns: float = 60.0
    # The drain and barrier across all engines that ends each iteration of a dynamic
    # loop (nl.fori_loop, nl.dynamic_range), after the iteration's work has finished.
    # Fitted (estimate) to the NKI dynamic-loops deep dive's trn1 figures (aws-neuron-sdk
    # nki/deep-dives/nki-dynamic-loops.rst @81d17e7: a [128, 2048] fp32 load, activation,
    # tensor_scalar, store; 7.5 us per tile unrolled, 17.9 us in fori_loop, 10.2 us
    # with four tiles per iteration), which the simulator gives as 6.5, 20.2 and 9.0 us
    # with this value (relative errors balanced); not measured on trn2.
    dynamic_loop_barrier_ns: float = 9000.0
    # Physical copies the compiler keeps of an allocation site's live set,
    # capacity permitting: "up to about three" in the public autotune notes;
    # with 2 the tutorial's tiled kernel reads 62 % MFU against 70 % measured.
    rotation_depth: int = 3

    # --- peak rates for utilisation figures ---
    # 2 * 128 * 128 * 2.4e9 per core, exactly: a measured 89.47 % at 0.2442 ms for
    # a 2048^3 matmul only fits this figure, not a rounded 79e12.
    peak_bf16_flops: float = 2 * 128 * 128 * 2.4e9
    fp32_peak_divisor: float = 4.0  # fp32 runs at a quarter of the 16-bit rate
    core_clock_hz: float = 2.4e9  # clock used for neuroncore_cycle_count

    # --- peak rates, per chip, for a roofline (read these, not the clocks) ---
    @property
    def tensor_peak_flops(self) -> float:
        """TensorE peak FLOP/s at 16-bit operands (bf16/fp16)."""
        return self.peak_bf16_flops

    @property
    def tensor_peak_flops_fp32(self) -> float:
        """TensorE peak FLOP/s with fp32 operands."""
        return self.peak_bf16_flops / self.fp32_peak_divisor

    @property
    def vector_elements_per_s(self) -> float:
        """VectorE elements/s: one element per partition per cycle (the cost model's rate)."""
        return self.vector_clock_hz * self.partitions

    @property
    def scalar_elements_per_s(self) -> float:
        """ScalarE elements/s: one element per partition per cycle."""
        return self.scalar_clock_hz * self.partitions

    @property
    def hbm_bytes_per_s(self) -> float:
        """HBM bandwidth of one core, bytes/s."""
        return self.hbm_bytes_per_ns * 1e9

    def __post_init__(self) -> None:
        if self.rotation_depth < 1:
            raise ValueError(f"rotation_depth must be >= 1, got {self.rotation_depth}")
        if self.dma_queues < 1:
            raise ValueError(f"dma_queues must be >= 1, got {self.dma_queues}")


DEFAULT_PARAMS = Trn2Params()
