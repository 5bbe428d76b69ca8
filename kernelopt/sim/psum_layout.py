"""How much of PSUM a tile takes: bytes, packed into banks, never across one.

PSUM is eight 2 KiB banks per partition. The placement API addresses bytes
inside a bank, not only banks: ``nki.compiler.psum.mod_alloc(base_bank=,
base_addr=, num_bank_tiles=, num_free_tiles=)`` (NKI API docs) puts block
``i`` at bank ``base_bank + i % num_bank_tiles`` and byte ``base_addr +
(i % num_free_tiles) * tile_bytes`` in it, so several small tiles share one
bank; a tile's free-dimension address need only be aligned to
``nl.tile_size.psum_min_align`` (4 bytes: the constant table of the formal
NKI semantics, leanprover/KLR ``KLR/Trace/NKI.lean``), and one logical tile
is at most one bank (``psum.alloc``: fdim_size cannot exceed 2 KiB). An
accumulation group (a matmul writes at most 512 fp32, one bank) must stay in
its bank, so a tile never straddles two: a tile of ``b`` bytes packs
``bank // b`` to a bank and takes ``bank / (bank // b)`` of it (a 128 x 128
bf16 transpose, 256 B, takes an eighth; a 1.5 KiB tile still takes a whole
bank). A tensor wider than a bank (several tiles under one name) takes whole
banks.
"""

from __future__ import annotations

PSUM_MIN_ALIGN = 4  # bytes: nl.tile_size.psum_min_align


def psum_footprint(per_partition: int, bank_bytes: int) -> int:
    """Bytes per partition a PSUM tensor of ``per_partition`` bytes takes."""
    aligned = -(-per_partition // PSUM_MIN_ALIGN) * PSUM_MIN_ALIGN
    if aligned > bank_bytes:
        return -(-aligned // bank_bytes) * bank_bytes
    per_bank = bank_bytes // aligned
    return -(-bank_bytes // per_bank)
