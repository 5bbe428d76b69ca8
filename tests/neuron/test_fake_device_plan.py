"""The fake Trn2 device's own memory plan (kernelopt/testing/fake_trn2/timing_plan.py):
copies per allocating line, modulo rotation, PSUM banks, hand-placed tiles, and
that the device's timing follows that plan, never the simulator's ``reuses``."""

from __future__ import annotations

import dataclasses

import pytest

from kernelopt.sim.trace import AllocationInfo, Instruction
from kernelopt.testing.fake_trn2 import timing, timing_lower, timing_plan

KIB = 1024
HBM = 0


def sbuf(alloc: int, kib: int, site: int, generation: int = 0, **kw) -> AllocationInfo:
    elements = kib * KIB // 2
    return AllocationInfo(
        alloc,
        f"t{alloc}",
        "sbuf",
        site,
        kib * KIB,
        site=(site,),
        generation=generation,
        partitions=128,
        shape=(128, elements),
        **kw,
    )


def psum(alloc: int, columns: int, site: int, generation: int = 0, **kw) -> AllocationInfo:
    return AllocationInfo(
        alloc,
        f"p{alloc}",
        "psum",
        site,
        max(2048, columns * 4),
        site=(site,),
        generation=generation,
        partitions=128,
        shape=(128, columns),
        **kw,
    )


def whole(a: AllocationInfo):
    return (a.alloc_id, ((0, 128), (0, a.shape[1])))


def load(a: AllocationInfo) -> Instruction:
    """An HBM-to-SBUF transfer filling ``a``."""
    nbytes = 128 * a.nbytes
    return Instruction(
        "dma_copy",
        "dma",
        1,
        ((HBM, ((0, 1 << 30),)),),
        (whole(a),),
        partitions=128,
        nbytes=nbytes,
        row_bytes=a.nbytes,
        hbm_read=nbytes,
    )


def use(a: AllocationInfo, out: AllocationInfo) -> Instruction:
    return Instruction(
        "tensor_copy", "vector", 1, (whole(a),), (whole(out),), partitions=128, free=512
    )


HBM_ALLOC = AllocationInfo(HBM, "in", "hbm", 1, 0)


def loop(allocs, sink):
    """Each generation loaded, then read into ``sink``: one loop iteration each."""
    trace = []
    for a in allocs:
        trace += [load(a), use(a, sink)]
    return trace


def test_a_loop_line_rotates_over_three_copies_taken_modulo() -> None:
    gens = [sbuf(1 + g, 16, site=20, generation=g) for g in range(5)]
    sink = sbuf(6, 1, site=30)
    plan = timing_plan.plan_memory(loop(gens, sink), (HBM_ALLOC, *gens, sink))
    assert plan.copies[("sbuf", (20,))] == 3
    assert plan.reuses == {4: (1,), 5: (2,)}  # generation g takes g mod 3's copy


def test_copies_are_granted_on_the_trn2_partition_at_the_second_allocation() -> None:
    # 150 KiB resident, 32 KiB per generation and a 1 KiB sink: 183 KiB live when the
    # line allocates again. The Trn2 guide's 224 KiB leave room for one extra copy
    # (NeuronCore-v2's 192 KiB would leave none).
    resident = sbuf(1, 150, site=10)
    gens = [sbuf(2 + g, 32, site=20, generation=g) for g in range(4)]
    sink = sbuf(6, 1, site=30)
    trace = [load(resident), *loop(gens, sink), use(resident, sink)]
    plan = timing_plan.plan_memory(trace, (HBM_ALLOC, resident, *gens, sink))
    assert timing_plan.SBUF_PARTITION_BYTES == 224 * KIB
    assert plan.copies[("sbuf", (20,))] == 2
    assert plan.reuses == {4: (2,), 5: (3,)}
    # Once the resident tile is gone before the line allocates again, three copies.
    early = [load(resident), use(resident, sink), *loop(gens, sink)]
    assert (
        timing_plan.plan_memory(early, (HBM_ALLOC, resident, *gens, sink)).copies[("sbuf", (20,))]
        == 3
    )


def test_a_generation_takes_its_copy_even_while_the_old_one_is_in_use() -> None:
    # Room for one copy only: generation 1 starts while generation 0 is still read.
    resident = sbuf(1, 200, site=10)
    g0, g1 = sbuf(2, 16, site=20, generation=0), sbuf(3, 16, site=20, generation=1)
    sink = sbuf(4, 1, site=30)
    trace = [load(resident), load(g0), load(g1), use(g0, sink), use(g1, sink)]
    trace.append(use(resident, sink))
    plan = timing_plan.plan_memory(trace, (HBM_ALLOC, resident, g0, g1, sink))
    assert plan.copies[("sbuf", (20,))] == 1
    assert plan.reuses == {3: (2,)}


def test_psum_tiles_rotate_round_the_banks_past_a_bank_in_use() -> None:
    kept = psum(1, 512, site=10)  # one bank, in use all along
    accs = [psum(2 + g, 512, site=20, generation=g) for g in range(9)]
    sink = sbuf(20, 2, site=30)
    trace = [Instruction("memset", "vector", 1, (), (whole(kept),), partitions=128, free=512)]
    for a in accs:
        trace.append(Instruction("memset", "vector", 1, (), (whole(a),), partitions=128, free=512))
        trace.append(use(a, sink))
    trace.append(use(kept, sink))
    plan = timing_plan.plan_memory(trace, (HBM_ALLOC, kept, *accs, sink))
    assert plan.banks[1] == (0,)
    # Banks 1..7, then bank 0 is still held: the cursor skips it to bank 1.
    assert [plan.banks[a.alloc_id] for a in accs] == [(b,) for b in (1, 2, 3, 4, 5, 6, 7, 1, 2)]
    assert plan.reuses[accs[7].alloc_id] == (accs[0].alloc_id,)
    assert 1 not in {x for v in plan.reuses.values() for x in v}  # the kept tile stays


def test_small_psum_tiles_pack_side_by_side_in_one_bank() -> None:
    tiles = [psum(1 + i, 128, site=10 + i) for i in range(5)]  # 512 B each
    sink = sbuf(9, 2, site=30)
    trace = [
        Instruction("memset", "vector", 1, (), (whole(t),), partitions=128, free=128) for t in tiles
    ] + [use(t, sink) for t in tiles]
    plan = timing_plan.plan_memory(trace, (HBM_ALLOC, *tiles, sink))
    assert [plan.banks[t.alloc_id] for t in tiles] == [(0,), (0,), (0,), (0,), (1,)]
    assert not plan.reuses


def test_hand_placed_tiles_share_memory_where_their_ranges_overlap() -> None:
    a = sbuf(1, 16, site=10, address=(0, 0))
    b = sbuf(2, 16, site=11, address=(0, 8 * KIB))  # overlaps a's second half
    c = sbuf(3, 16, site=12, address=(0, 32 * KIB))  # apart
    sink = sbuf(4, 1, site=30)
    trace = loop((a, b, c), sink)
    plan = timing_plan.plan_memory(trace, (HBM_ALLOC, a, b, c, sink))
    assert plan.reuses == {2: (1,)}


def test_the_device_times_its_own_plan_not_the_simulators_reuses() -> None:
    gens = [sbuf(1 + g, 16, site=20, generation=g) for g in range(4)]
    sink = sbuf(6, 1, site=30)
    allocations = (HBM_ALLOC, *gens, sink)
    trace = loop(gens, sink)
    own = timing.time_trace(trace, allocations, False)
    # A simulator plan that made every generation wait for the previous one does
    # not change the device's timeline ...
    serial = tuple(
        dataclasses.replace(a, reuses=(a.alloc_id - 1,)) if a in gens[1:] else a
        for a in allocations
    )
    assert timing.time_trace(trace, serial, False).end_ns == own.end_ns
    # ... while the device's own plan does: generation 3 takes generation 0's copy,
    # so its load waits for generation 0's last read.
    plan = timing_plan.plan_memory(trace, allocations)
    assert plan.reuses == {4: (1,)}
    read0 = trace.index(use(gens[0], sink))
    load3 = trace.index(load(gens[3]))
    pipe = timing.PIPE_CYCLES["vector"] / timing.ENGINE_HZ["vector"] * 1e9
    assert own.start_ns[load3] >= own.end_ns[read0] - pipe + timing.SEMAPHORE_NS - 1e-6
    one_copy = (
        HBM_ALLOC,
        *[dataclasses.replace(g, generation=0, site=(20 + i,)) for i, g in enumerate(gens)],
        sink,
    )
    free = timing.time_trace(trace, one_copy, False)
    assert free.start_ns[load3] < free.start_ns[read0]  # fresh memory: loaded ahead


@pytest.mark.parametrize("kind", ["sbuf", "psum"])
def test_untouched_allocations_take_no_place(kind: str) -> None:
    made = sbuf(1, 16, site=10) if kind == "sbuf" else psum(1, 512, site=10)
    plan = timing_plan.plan_memory([], (HBM_ALLOC, made))
    assert plan.reuses == {} and plan.banks == {}


def psum_memset(a: AllocationInfo) -> Instruction:
    return Instruction(
        "memset", "vector", 1, (), (whole(a),), partitions=128, free=a.shape[1], nbytes=0
    )


def test_a_call_over_several_psum_banks_is_issued_bank_by_bank() -> None:
    acc = AllocationInfo(
        1, "acc", "psum", 10, 8192, site=(10,), partitions=128, shape=(128, 4, 512)
    )
    out = sbuf(2, 16, site=11)
    out = dataclasses.replace(out, shape=(128, 4, 512), nbytes=8192)
    full = (1, ((0, 128), (0, 4), (0, 512)))
    drain = Instruction(
        "tensor_copy",
        "vector",
        1,
        (full,),
        ((2, ((0, 128), (0, 4), (0, 512))),),
        partitions=128,
        free=2048,
        psum_read=True,
    )
    memset = Instruction("memset", "vector", 1, (), (full,), partitions=128, free=2048)
    mm = Instruction(
        "nc_matmul",
        "tensor",
        1,
        ((2, ((0, 128), (0, 1), (0, 128))),),
        ((1, ((0, 128), (0, 1), (0, 512))),),
        partitions=128,
        free=512,
        macs=128 * 128 * 512,
    )
    only_sbuf = use(out, out)
    trace = [memset, mm, drain, only_sbuf]
    plan = timing_plan.plan_memory(trace, (HBM_ALLOC, acc, out))
    assert plan.banks[1] == (0, 1, 2, 3)
    lowered = timing_lower.split_psum(trace, plan)
    assert [i for i, _ in lowered] == [0, 0, 0, 0, 1, 2, 2, 2, 2, 3]
    pieces = [ins for i, ins in lowered if i == 2]
    assert [ins.reads[0][1][1] for ins in pieces] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    # The drain's SBUF side is cut the same way; each piece does a quarter of the work.
    assert [ins.writes[0][1][1] for ins in pieces] == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert all(ins.free == 512 for ins in pieces)


def test_the_next_accumulator_starts_bank_by_bank_as_the_drain_frees_them() -> None:
    # A whole-PSUM accumulator (8 banks) allocated twice: the second takes over the
    # first. Its memset, issued per bank, lets TensorE start on bank 0 as soon as
    # bank 0 is drained, while ScalarE still drains banks 1-7 of the first.
    gens = [
        AllocationInfo(
            1 + g,
            "acc",
            "psum",
            10,
            16384,
            site=(10,),
            generation=g,
            partitions=128,
            shape=(128, 8, 512),
        )
        for g in range(2)
    ]
    a = sbuf(3, 1, site=20)
    b = sbuf(4, 1, site=21)
    out = sbuf(5, 1, site=22)

    def bank(alloc: int, j: int):
        return (alloc, ((0, 128), (j, j + 1), (0, 512)))

    trace = []
    for g in gens:
        trace.append(psum_memset(dataclasses.replace(g, shape=(128, 8, 512))))
        trace[-1] = dataclasses.replace(
            trace[-1], writes=((g.alloc_id, ((0, 128), (0, 8), (0, 512))),), free=4096
        )
        for j in range(8):
            trace.append(
                Instruction(
                    "nc_matmul",
                    "tensor",
                    1,
                    (whole(a), whole(b)),
                    (bank(g.alloc_id, j),),
                    partitions=128,
                    free=512,
                    stationary_free=128,
                    macs=128 * 128 * 512,
                )
            )
        for j in range(8):
            trace.append(
                Instruction(
                    "activation",
                    "scalar",
                    1,
                    (bank(g.alloc_id, j),),
                    (whole(out),),
                    partitions=128,
                    free=512,
                    psum_read=True,
                )
            )
    allocations = (HBM_ALLOC, *gens, a, b, out)
    assert timing_plan.plan_memory(trace, allocations).reuses == {2: (1,)}
    run = timing.time_trace(trace, allocations, False)
    last_drain_first = 16
    first_matmul_second = 18
    assert run.start_ns[first_matmul_second] < run.end_ns[last_drain_first]
