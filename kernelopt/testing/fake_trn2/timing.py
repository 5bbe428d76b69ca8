"""How long the fake Trn2 device takes to run a kernel: its own timing model.

The fake device must disagree with kernelopt's cost model the way real
hardware does: through mechanisms the model does not have, not through the
model's own equations with other numbers. So this file times the executed
instruction stream (the list of ``kernelopt.sim.trace.Instruction`` records
the kernel's trace yields: what each instruction is, which engine runs it,
what it reads and writes, its sizes) with a model of its own. Nothing here
reads ``kernelopt.sim.cost``, ``kernelopt.sim.schedule``, the simulator's
memory plan (``AllocationInfo.reuses``) or a ``Trn2Params`` field: which
allocations take over whose physical memory is the device compiler's own
decision (``timing_plan.py``).

The model is five files: this one (the numbers, the device and its
timeline), ``timing_plan.py`` (the device compiler's placement and buffer
rotation), ``timing_lower.py`` (its lowering of PSUM calls by bank),
``timing_mechanisms.py`` (its building blocks: an in-order engine,
a shared link, per-allocation access history) and ``timing_profile.py`` (the
neuron-profile style summary of a timeline). They import nothing of kernelopt
but each other.

Every mechanism is a physical statement with the public description it
follows. Sources:

- [v3] NeuronCore-v3 architecture page and the NKI Trainium2 architecture
  guide (awsdocs-neuron.readthedocs-hosted.com, about-neuron/arch/neuron-
  hardware/neuron-core-v3 and nki/arch/trainium2_arch): 79 BF16 TFLOPS per
  core (128 x 128 PEs at 2.4 GHz), HBM 2.9 TB/s per 8-core chip, 128 DMA
  engines per chip (16 per core), PSUM 2 MiB = 128 partitions x 8 banks x 2 KiB.
- [v2] NKI Trainium/Inferentia2 architecture guide and performance guide:
  each engine runs its own in-order instruction stream; engines synchronise
  through semaphores the compiler inserts; VectorE 0.96 GHz, ScalarE and
  GpSimd 1.2 GHz (figures carried to v3 in the project's NEURON.md summary);
  a matmul streams one moving column per cycle (16-bit), fp32 at a quarter
  of that rate; each ``nc_matmul`` is a stationary (weights) load plus a
  moving multiply, the next load overlapping the current multiply and up to
  four times faster than a multiply of the same free size; TensorE starts
  throttled (~50 %) and ramps to full over ~3 us of activity.
- [cal] SIM-CALIBRATION.md (public nki-autotune notes): a TensorE transpose
  whose PSUM tile shares a bank with the matmul drain caps a kernel near
  33 % (PSUM bank contention); block-sized DMAs beat per-tile DMAs by ~26 pp;
  the DMA transpose moves fixed 16 x 128 two-byte blocks.
- Statements marked (unverified) are this fake's assumptions: no public
  source settles the number. They were set so that the device stays near
  the public Trn2 figures of the calibration kernels (3.7 pp on average).
  Against kernelopt's model it ranks the KernelIR states of ir/matmul with
  rank correlation 0.80 (the public record: about 0.8) but all 38 kernels
  of benchmarks/fake_device_agreement.py with 0.91, and reads mid-range
  kernels only 4.9 pp faster than the model on average (public: 7-12 pp):
  both time the same traced instruction stream (docs/screening.md).

Mechanisms the device has (each a ``_Device`` step below):

1. In-order engines with a short reorder window. Each engine executes its
   instruction stream in order [v2]; the compiler's scheduler (when on) may
   move an instruction ahead of at most ``REORDER_WINDOW`` earlier
   instructions of the same engine (unverified), never across the whole
   kernel, and only into a stretch where the engine is idle: an engine runs
   one instruction at a time.
2. Pipelined engines. An engine accepts the next instruction when the
   current one has streamed its operands (its occupancy), but a result is
   usable only after the engine's pipeline latency (``PIPE_CYCLES``;
   TensorE: the 128-row systolic array drains, ``TENSOR_DRAIN_CYCLES``)
   (unverified numbers, standard pipeline behaviour). Independent
   back-to-back instructions overlap that latency; a dependent one waits.
   Matmuls accumulating into one PSUM tile follow each other through the
   array without waiting for it to drain.
3. Semaphore waits. A result produced on another engine reaches a consumer
   after ``SEMAPHORE_NS``, and each distinct semaphore an instruction waits
   on costs its engine ``SEMAPHORE_POLL_NS`` of issue time (unverified).
4. Dispatch. Every instruction costs its engine a fixed decode/dispatch
   ``DISPATCH_CYCLES`` (unverified), so tiny instructions are
   dispatch-bound.
5. TensorE weights. A matmul whose stationary operand differs from the
   previous matmul's loads new weights: M rows at four per cycle [v2],
   hidden behind the previous multiply's moving phase, exposed when that
   phase was shorter. TensorE transposes stream max(P, F) columns.
6. TensorE clock ramp. The array runs at half rate when it starts after
   ``THROTTLE_IDLE_NS`` idle and ramps linearly to full rate over
   ``RAMP_NS`` of activity [v2] (a ramp, not a step).
7. PSUM bank ports. PSUM has 8 banks of 2 KiB per partition [v3]. The
   device's compiler places PSUM tiles in banks (``timing_plan.py``, rule
   2: a rotating cursor, small tiles packed side by side, so consecutive
   small tiles share a bank). An access to a bank waits while another
   engine's access to the same bank is in progress (one port per bank: the
   [cal] contention of a transpose tile beside the drain; unverified in
   detail).
8. DMA rings and descriptors. A transfer goes to one of the core's 16 DMA
   rings [v3] in program order (round robin), each ring in order; a
   transfer is cut into one descriptor per contiguous run of bytes, and the
   ring spends ``DESCRIPTOR_NS`` per descriptor (spread over the core's
   engines). The first byte arrives ``DMA_LATENCY_NS`` after the transfer
   starts (hardware descriptor generation, ~0.6 us; software generation
   slower) [v2 guide figures as summarised in NEURON.md]. Data then moves
   over the core's share of HBM bandwidth (2.9 TB/s / 8 [v3]), shared by the
   rings in flight: a transfer takes the earliest free stretch of the link,
   so a late transfer on one ring does not hold back a ready one on another.
   Each descriptor also costs the link ``DESCRIPTOR_LINK_NS`` (address
   set-up and burst turnaround): with 1.4 ns a 2 KiB run moves at about 80 %
   of the link and a 4 KiB run at about 89 %, the guide's "2 KiB ~ 80 %,
   >= 4 KiB ~ saturating". SBUF-to-SBUF copies use the on-chip path at
   ``SBUF_DMA_BYTES_PER_NS`` (unverified).
9. HBM pages. A contiguous run shorter than ``HBM_PAGE_BYTES`` wastes the
   rest of the page it opens: ``PAGE_OPEN_NS`` more per run (unverified;
   the guide's "< 256 B severely overhead-bound"). Longer runs stream.
10. DMA transpose. The DMA engine transposes 2-byte elements in 16 x 128
    blocks [cal] through a unit that moves ``DMA_TRANSPOSE_BYTES_PER_NS``
    (unverified).
11. Launch. The measured device time includes the engines' first
    instruction fetch and the final completion semaphore,
    ``LAUNCH_NS`` (unverified).
12. Memory taken over. Which allocation takes over whose memory is the
    device compiler's plan (``timing_plan.py``). Hypothesis (unverified):
    the compiler's dependency analysis works on addresses, so when the new
    tile has the old one's shape (each element at the same address), a
    write to it waits only for the old tile's accesses to the same bytes;
    otherwise its first access waits for the old tile's last.
13. PSUM calls split by bank. A call over a PSUM tensor of several banks
    runs as one instruction per bank (``timing_lower.py``), each waiting
    only for what touches its bank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelopt.testing.fake_trn2.timing_lower import split_psum
from kernelopt.testing.fake_trn2.timing_mechanisms import (
    Accesses,
    Bandwidth,
    Engine,
    covers,
    overlaps,
    union,
)
from kernelopt.testing.fake_trn2.timing_plan import (
    PSUM_BANKS,
    MemoryPlan,
    banks_touched,
    plan_memory,
)

# --- clocks and peak [v2]/[v3] ---
TENSOR_HZ = 2.4e9
ENGINE_HZ = {"vector": 0.96e9, "scalar": 1.2e9, "gpsimd": 1.2e9, "tensor": TENSOR_HZ}
PEAK_BF16_FLOPS = 2 * 128 * 128 * 2.4e9
FP32_RATE_DIVISOR = 4.0  # fp32 matmul streams at a quarter of the 16-bit rate [v2]

# --- mechanisms 1-4 (unverified numbers) ---
REORDER_WINDOW = 4
PIPE_CYCLES = {"vector": 40, "scalar": 48, "gpsimd": 64}
TENSOR_DRAIN_CYCLES = 128
SEMAPHORE_NS = 35.0
SEMAPHORE_POLL_NS = 12.0
DISPATCH_CYCLES = {"tensor": 8, "vector": 32, "scalar": 40, "gpsimd": 56}

# GpSimd: eight cores of 16 lanes serve the 128 partitions (unverified rate).
GPSIMD_CYCLES_PER_ELEMENT = 2.0

# --- mechanisms 5-6 ---
WEIGHT_ROWS_PER_CYCLE = 4  # [v2] "up to 4x faster than a multiply"
THROTTLE_IDLE_NS = 3000.0  # [v2]
RAMP_NS = 3000.0  # [v2]
THROTTLED_RATE = 0.5  # [v2]

# --- mechanisms 8-10 ---
DMA_RINGS = 16  # per core [v3]
HBM_BYTES_PER_NS = 2.9e12 / 8 / 1e9  # per core [v3]
SBUF_DMA_BYTES_PER_NS = 300.0
DESCRIPTOR_NS = 48.0
DESCRIPTOR_LINK_NS = 1.4
DMA_LATENCY_NS = 600.0
SWDGE_LATENCY_NS = 1500.0
HBM_PAGE_BYTES = 512
PAGE_OPEN_NS = 1.0
DMA_TRANSPOSE_BYTES_PER_NS = 260.0

# --- mechanism 11 ---
LAUNCH_NS = 1500.0

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
_HISTORY = 48  # accesses kept per allocation (older ones have long finished)


@dataclass
class DeviceRun:
    """The device's timeline of one execution."""

    total_ns: float
    busy_ns: dict[str, float]
    start_ns: list[float] = field(default_factory=list)
    end_ns: list[float] = field(default_factory=list)


class _Device:
    def __init__(self, plan: MemoryPlan, scheduler_on: bool) -> None:
        window = REORDER_WINDOW if scheduler_on else 1
        self.engines = {e: Engine(window) for e in ENGINES if e != "dma"}
        self.rings = [0.0] * DMA_RINGS  # when each ring has processed its descriptors
        self.ring_busy: list[tuple[float, float]] = []
        self.next_ring = 0
        self.hbm = Bandwidth()  # the core's share of HBM bandwidth (mechanism 8)
        self.onchip = Bandwidth()
        self.acc: dict[int, Accesses] = {}
        self.last_use: dict[int, float] = {}
        self.reuses = plan.reuses  # the device compiler's own plan (timing_plan.py)
        self.plan = plan
        self.layout = plan.layout
        # Allocations whose memory a later one takes over keep their whole access
        # history: the later one's writes wait for the accesses to the same bytes.
        self.taken = {old for olds in plan.reuses.values() for old in olds}
        self.touched: set[int] = set()
        self.synced: dict[str, dict[str, float]] = {}  # engine -> producer -> signal seen
        self.last_owner: dict[int, str] = {}
        self.bank_free = [0.0] * PSUM_BANKS
        self.bank_owner = [""] * PSUM_BANKS
        self.last_stationary: Any = None
        self.last_moving_cycles = 0.0
        self.tensor_active_since = None
        self.tensor_last_end = -1e18

    # --- dependencies (mechanisms 2, 3) ---
    def _ready(self, ins: Any, engine: str) -> tuple[float, int]:
        """When the operands allow ``ins`` to start, and how many semaphores its
        engine must wait on: one per other engine whose signal it has not yet
        seen (an engine that already waited past that point needs no new wait)."""
        needs: dict[str, float] = {}

        def need(other: str, t: float) -> None:
            needs[other] = max(needs.get(other, 0.0), t)

        for alloc, box in ins.reads:
            for wbox, usable, weng, end in self.acc.get(alloc, Accesses()).writes:
                if overlaps(box, wbox):
                    # Matmuls accumulating into one PSUM tile follow each other
                    # through the array without waiting for it to drain.
                    need(weng, end if weng == engine == "tensor" else usable)
        for alloc, box in ins.writes:
            acc = self.acc.get(alloc)
            if acc is None:
                continue
            for entry in acc.reads + acc.writes:
                if overlaps(box, entry[0]):
                    # An in-order pipeline retires its own writes in order.
                    same = entry[2] == engine and len(entry) == 4
                    need(entry[2], entry[3] if same else entry[1])
        for alloc, _ in (*ins.reads, *ins.writes):
            if alloc not in self.touched:
                self.touched.add(alloc)
                for old in self.reuses.get(alloc, ()):
                    if old in self.last_use and not self._same_layout(alloc, old):
                        need(self.last_owner.get(old, engine), self.last_use[old])
        for alloc, box in ins.writes:
            # Memory taken over with the same layout: a write waits only for the old
            # tile's accesses to the same bytes (mechanism 12).
            for old in self.reuses.get(alloc, ()):
                if self._same_layout(alloc, old):
                    acc = self.acc.get(old, Accesses())
                    for entry in acc.reads + acc.writes:
                        if overlaps(box, entry[0]):
                            need(entry[2], entry[1])
        ready, waits = 0.0, 0
        seen = self.synced.setdefault(engine, {})
        for other, t in needs.items():
            if other == engine:
                ready = max(ready, t)
            elif t > seen.get(other, -1.0):
                ready = max(ready, t + SEMAPHORE_NS)
                seen[other] = t
                waits += 1
            else:
                ready = max(ready, t)
        return ready, waits

    def _same_layout(self, alloc: int, old: int) -> bool:
        shape = self.layout.get(alloc)
        return bool(shape) and shape == self.layout.get(old)

    def _record(self, ins: Any, engine: str, end: float, usable: float) -> None:
        for alloc, box in ins.reads:
            acc = self.acc.setdefault(alloc, Accesses())
            acc.reads.append((box, end, engine))
            if len(acc.reads) > _HISTORY and alloc not in self.taken:
                acc.reads.pop(0)
            if end >= self.last_use.get(alloc, 0.0):
                self.last_use[alloc], self.last_owner[alloc] = end, engine
        for alloc, box in ins.writes:
            acc = self.acc.setdefault(alloc, Accesses())
            acc.writes = [w for w in acc.writes if not covers(box, w[0])]
            acc.reads = [r for r in acc.reads if not covers(box, r[0])]
            acc.writes.append((box, usable, engine, end))
            if len(acc.writes) > _HISTORY and alloc not in self.taken:
                acc.writes.pop(0)
            if usable >= self.last_use.get(alloc, 0.0):
                self.last_use[alloc], self.last_owner[alloc] = usable, engine

    # --- PSUM banks (mechanism 7) ---
    def _banks(self, ins: Any) -> tuple[int, ...]:
        """The PSUM banks ``ins`` touches, where the device's plan put its tiles."""
        banks: set[int] = set()
        for alloc, box in (*ins.reads, *ins.writes):
            banks.update(banks_touched(self.plan, alloc, box))
        return tuple(sorted(banks))

    # --- engine costs (mechanisms 4, 5, 6) ---
    def _compute_cycles(self, ins: Any, engine: str) -> float:
        free = max(1, int(ins.free))
        if engine == "tensor":
            rate = FP32_RATE_DIVISOR if ins.wide else 1.0
            if ins.op == "nc_matmul" and ins.macs:
                moving = free * rate
                load = 0.0
                stationary = ins.reads[0] if ins.reads else None
                if stationary != self.last_stationary:
                    load = max(
                        0.0,
                        ins.stationary_free / WEIGHT_ROWS_PER_CYCLE * rate
                        - self.last_moving_cycles,
                    )
                self.last_stationary = stationary
                self.last_moving_cycles = moving
                return moving + load
            self.last_stationary = None
            self.last_moving_cycles = 0.0
            return max(int(ins.partitions), free) * rate
        if ins.op == "memset" or ins.op.endswith("memset"):
            return free / max(1, int(ins.elements_per_cycle))
        per_element = 1.0
        if engine == "vector" and not ins.wide and not ins.psum_read and ins.inputs <= 1:
            per_element = 0.5  # fast mode on 16-bit SBUF operands [v2]
        if engine == "gpsimd":
            per_element = GPSIMD_CYCLES_PER_ELEMENT
        streams = max(1, int(ins.inputs))
        if ins.psum_read:
            streams = max(1, streams - 1)  # the PSUM operand streams beside the SBUF one
        return free * per_element * streams

    def _tensor_rate(self, start: float) -> float:
        if start - self.tensor_last_end > THROTTLE_IDLE_NS or self.tensor_active_since is None:
            self.tensor_active_since = start
        active = start - self.tensor_active_since
        if active >= RAMP_NS:
            return 1.0
        return THROTTLED_RATE + (1.0 - THROTTLED_RATE) * active / RAMP_NS

    # --- one instruction ---
    def run(self, ins: Any) -> tuple[float, float]:
        engine = ins.engine
        ready, waits = self._ready(ins, engine)
        banks = self._banks(ins)
        owner = "tensor" if engine == "tensor" else "other"
        for b in banks:
            if self.bank_owner[b] and self.bank_owner[b] != owner:
                ready = max(ready, self.bank_free[b])
        if engine == "dma":
            start, end = self._dma(ins, ready, waits)
            usable = end
        else:
            hz = ENGINE_HZ[engine]
            cycles = self._compute_cycles(ins, engine) + DISPATCH_CYCLES[engine]
            occupancy = cycles / hz * 1e9 + waits * SEMAPHORE_POLL_NS
            if engine == "tensor":
                rate = self._tensor_rate(max(ready, self.engines["tensor"].free))
                occupancy /= rate
            start = self.engines[engine].place(ready, occupancy)
            end = start + occupancy
            if engine == "tensor":
                # An instruction placed in an earlier gap does not make the array idle.
                self.tensor_last_end = max(self.tensor_last_end, end)
                latency = TENSOR_DRAIN_CYCLES / TENSOR_HZ * 1e9
            else:
                latency = PIPE_CYCLES[engine] / hz * 1e9
            usable = end + latency
        for b in banks:
            if self.bank_owner[b] == owner:
                self.bank_free[b] = max(self.bank_free[b], end)
            else:
                self.bank_owner[b], self.bank_free[b] = owner, end
        self._record(ins, engine, usable if engine == "dma" else end, usable)
        return start, usable

    def _dma(self, ins: Any, ready: float, waits: int) -> tuple[float, float]:
        nbytes = max(1, int(ins.nbytes))
        run = max(1, min(nbytes, int(ins.row_bytes) or nbytes))
        descriptors = -(-nbytes // run)
        ring = self.next_ring
        self.next_ring = (ring + 1) % DMA_RINGS
        start = max(ready, self.rings[ring]) + waits * SEMAPHORE_POLL_NS
        # Descriptors are processed by the ring, spread over the core's engines.
        desc_ns = descriptors * DESCRIPTOR_NS / DMA_RINGS
        self.rings[ring] = start + desc_ns
        self.ring_busy.append((start, start + desc_ns))
        latency = SWDGE_LATENCY_NS if ins.software_dge else DMA_LATENCY_NS
        hbm = ins.hbm_read or ins.hbm_write
        if "transpose" in ins.op:
            data_ns = nbytes / DMA_TRANSPOSE_BYTES_PER_NS
        elif hbm:
            pages = descriptors if run < HBM_PAGE_BYTES else 0  # longer runs stream
            data_ns = (
                nbytes / HBM_BYTES_PER_NS + pages * PAGE_OPEN_NS + descriptors * DESCRIPTOR_LINK_NS
            )
        else:
            data_ns = nbytes / SBUF_DMA_BYTES_PER_NS
        first = start + latency
        link = self.hbm if hbm or "transpose" in ins.op else self.onchip
        begin = link.take(first, data_ns)
        end = max(begin + data_ns, self.rings[ring])
        self.ring_busy.append((begin, begin + data_ns))
        return start, end


def time_trace(
    trace: Sequence[Any], allocations: Sequence[Any], scheduler_on: bool = True
) -> DeviceRun:
    """The fake device's timeline for an executed instruction stream."""
    plan = plan_memory(trace, allocations)
    device = _Device(plan, scheduler_on)
    starts, ends = [float("inf")] * len(trace), [0.0] * len(trace)
    for index, ins in split_psum(trace, plan):
        s, e = device.run(ins)
        starts[index] = min(starts[index], s)
        ends[index] = max(ends[index], e)
    total = (max(ends) if ends else 0.0) + LAUNCH_NS
    busy = {e: union(device.engines[e].busy) for e in device.engines}
    busy["dma"] = union(device.ring_busy)
    return DeviceRun(total_ns=total, busy_ns=busy, start_ns=starts, end_ns=ends)
