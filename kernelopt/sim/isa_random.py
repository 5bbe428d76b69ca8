"""Random instructions: ``nki.isa.dropout``, and the fill and seed behind beta-1
``nl.rand`` and ``nl.random_seed``."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelopt.sim.isa_engines import EngineCalls
from kernelopt.sim.tensor import Tile


class RandomCalls(EngineCalls):
    """VectorE instructions that draw random numbers (seeded per run)."""

    def dropout(self, dst: Any, data: Any, prob: Any, name: str | None = None) -> None:
        """Zero each element of ``data`` with probability ``prob`` (a number, or a
        [P, 1] tile of per-partition probabilities) on VectorE; the kept elements are
        not rescaled (nki.isa.dropout: 1.0 zeroes all, 0.0 keeps all). The draws come
        from a generator seeded per run, so a run is repeatable."""
        op = "dropout"
        dst, (src,) = self._elementwise_operands(op, dst, data=data)
        inputs = [src]
        if isinstance(prob, Tile):
            if prob.partitions != src.partitions or prob.free_size != 1:
                self.m.fail("isa", f"{op}: prob must be a number or a [P, 1] tile, got {prob!r}")
            inputs.append(prob)
            rate = self.m.read(prob, op)
        else:
            rate = float(prob)
            if not 0.0 <= rate <= 1.0:
                self.m.fail("isa", f"{op}: prob must be in [0, 1], got {rate}")
        value = self.m.read(src, op)
        if value is not None:
            rate = np.reshape(rate, (-1,) + (1,) * (value.ndim - 1)) if np.ndim(rate) else rate
            keep = self.m.random(value.shape) >= rate
            value = np.where(keep, value, 0.0)
        self.m.write(dst, value)
        self._emit(op, "vector", inputs, [dst], partitions=dst.partitions, free=dst.free_size)

    def random_fill(self, dst: Tile) -> None:
        """``dst`` filled with uniform draws in [0, 1) (beta-1 ``nl.rand``). The reference
        names no engine or cost: charged as one VectorE pass (an estimate, unverified)."""
        self._in("rand", "dst", dst, "sbuf")
        self.m.write(dst, self.m.random(dst.shape) if self.m.compute else None)
        self._emit("rand", "vector", [], [dst], partitions=dst.partitions, free=dst.free_size)

    def random_seed(self, seed: Any) -> None:
        """Seed the generator (beta-1 ``nl.random_seed``): the same seed gives the same
        draws. A seed tile's value is read; in a trace-only run it is taken as 0."""
        if isinstance(seed, Tile):
            values = self.m.read(seed, "random_seed")
            seed = 0 if values is None else int(np.asarray(values).reshape(-1)[0])
        self.m.reseed(int(seed))
