"""``nisa.tensor_reduce``: a reduction over a tile's innermost free axes on VectorE."""

from __future__ import annotations

from typing import Any

from kernelopt.sim.isa_base import IsaCore


class ReduceCalls(IsaCore):
    """``tensor_reduce`` as kernels call it, and as the high-level reductions lower to it."""

    def tensor_reduce(
        self,
        dst: Any,
        op: Any,
        data: Any,
        axis: Any,
        negate: bool = False,
        keepdims: bool = False,
        name: str | None = None,
    ) -> None:
        shape = getattr(data, "shape", ())
        axes = trailing_axes(axis, len(shape))
        self.reduce_free_axes(dst, op, data, axes, negate=negate, keepdims=keepdims)

    def reduce_free_axes(
        self,
        dst: Any,
        op: Any,
        data: Any,
        axis: Any,
        negate: bool = False,
        keepdims: bool = False,
    ) -> None:
        """``tensor_reduce`` over ``axis`` numbered as numpy numbers them (the high-level
        reductions, ``nl.sum(x, axis=)``, come here directly)."""
        m, name = self.m, "tensor_reduce"
        fn = self._op(name, op, 2)
        if fn.reduce is None:
            m.fail(
                "isa",
                f"{name}: {fn!r} cannot reduce; use nl.add, nl.maximum, nl.minimum or nl.multiply",
            )
        dst = self._tile(name, "dst", dst)
        src = self._tile(name, "data", data)
        self._in(name, "dst", dst, "sbuf", "psum")
        self._in(name, "data", src, "sbuf", "psum")
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        norm = []
        for a in axes:
            if not isinstance(a, int) or not -src.ndim <= a < src.ndim:
                m.fail("isa", f"{name}: axis {a!r} out of range for data of shape {src.shape}")
            norm.append(a % src.ndim)
        if 0 in norm:
            m.fail("isa", f"{name}: cannot reduce the partition axis (axis 0); free axes only")
        kept = tuple(1 if i in norm else d for i, d in enumerate(src.shape))
        expected = kept if keepdims else tuple(d for i, d in enumerate(src.shape) if i not in norm)
        # A dst with the reduced axes kept as 1 holds the same values per partition, and
        # the public tutorials write one without keepdims=True (nki-samples
        # attention_fwd_performance/attention_kernels.py @a2927a5, a [128, 1] row max).
        if dst.shape not in (expected, kept):
            m.fail("isa", f"{name}: shape mismatch: dst {dst.shape}, expected {expected}")
        value = m.read(src, name)
        if value is not None:
            value = fn.reduce(value, axis=tuple(norm), keepdims=keepdims).reshape(dst.shape)
            if negate:
                value = -value
        m.write(dst, value)
        self._emit(name, "vector", [src], [dst], partitions=src.partitions, free=src.free_size)


def trailing_axes(axis: Any, ndim: int) -> Any:
    """The axes an ``nisa.tensor_reduce`` call means. Its reduction axes are always the
    innermost free axes, and the two public numberings of them disagree: the
    Trn2/Trn3 page (SDK 2.31) counts as numpy does ("the last contiguous free
    dimension(s), ending at the final dimension": axis=(3,) of a 4-D tile), the
    earlier page counts from the most minor free axis ("must contain axis 1
    (most-minor)"). Public kernels write both (nki-library ``cascaded_max.py``
    @0759719 and ``layernorm_tkg.py`` @181b205 reduce the last axis of a 3-D tile
    with axis=1, ``rmsnorm_tkg.py`` @092a49d with axis=2). Axes that read as numpy's
    trailing run are kept; axes that only the most-minor numbering makes trailing are
    read that way; anything else is left to fail or run as numpy reads it."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if ndim < 2 or not axes or not all(isinstance(a, int) and 0 < a < ndim for a in axes):
        return axis

    def trailing(run: list[int]) -> bool:
        return run == list(range(ndim - len(run), ndim))

    if trailing(sorted(axes)):
        return axis
    mirrored = sorted(ndim - a for a in axes)
    return tuple(mirrored) if trailing(mirrored) else axis
